//! NLTK's Porter stemmer (`NLTK_EXTENSIONS` mode), the one rouge-score stems with.

/// NLTK's `PorterStemmer()` (default `NLTK_EXTENSIONS` mode) `.stem(word)`: the
/// Porter (1980) algorithm with Martin Porter's and NLTK's later changes
/// (irregular forms such as `dying -> die`, `-ies`/`-ied` on 4-letter words, `y -> i`
/// only after a consonant, `-alli`, `-fulli`, `-logi`). rouge-score stems with it,
/// so ROUGE with `use_stemmer=True` needs exactly this variant: `studies`,
/// `studied` and `study` must all become `studi`.
pub fn porter_stem(word: &str) -> String {
    let lower = word.to_lowercase();
    if let Some(irregular) = porter_irregular(&lower) {
        return irregular.to_string();
    }
    if word.chars().count() <= 2 {
        return lower;
    }
    let mut w: Vec<char> = lower.chars().collect();
    for step in [step1a, step1b, step1c, step2, step3, step4, step5a, step5b] {
        w = step(w);
    }
    w.into_iter().collect()
}

/// NLTK_EXTENSIONS' pool of irregular forms.
fn porter_irregular(word: &str) -> Option<&'static str> {
    Some(match word {
        "sky" | "skies" => "sky",
        "dying" => "die",
        "lying" => "lie",
        "tying" => "tie",
        "news" => "news",
        "innings" | "inning" => "inning",
        "outings" | "outing" => "outing",
        "cannings" | "canning" => "canning",
        "howe" => "howe",
        "proceed" => "proceed",
        "exceed" => "exceed",
        "succeed" => "succeed",
        _ => return None,
    })
}

/// Consonant flags of every letter: not a vowel, and `y` only when it does not
/// follow a consonant (NLTK's `_consonant_flags`).
fn consonant_flags(w: &[char]) -> Vec<bool> {
    let mut flags: Vec<bool> = Vec::with_capacity(w.len());
    for (i, &c) in w.iter().enumerate() {
        let f = match c {
            'a' | 'e' | 'i' | 'o' | 'u' => false,
            'y' => i == 0 || !flags[i - 1],
            _ => true,
        };
        flags.push(f);
    }
    flags
}

/// The measure m of `[C](VC){m}[V]`.
fn measure(w: &[char]) -> usize {
    consonant_flags(w).windows(2).filter(|p| !p[0] && p[1]).count()
}

fn contains_vowel(w: &[char]) -> bool {
    consonant_flags(w).iter().any(|&c| !c)
}

/// Condition `*d`: ends with a double consonant.
fn ends_double_consonant(w: &[char]) -> bool {
    let n = w.len();
    n >= 2 && w[n - 1] == w[n - 2] && consonant_flags(w)[n - 1]
}

/// Condition `*o`: ends consonant-vowel-consonant, the last not `w`, `x` or `y`;
/// NLTK also accepts a two-letter vowel-consonant word.
fn ends_cvc(w: &[char]) -> bool {
    let n = w.len();
    let c = consonant_flags(w);
    (n >= 3 && c[n - 3] && !c[n - 2] && c[n - 1] && !matches!(w[n - 1], 'w' | 'x' | 'y')) || (n == 2 && !c[0] && c[1])
}

fn ends_with(w: &[char], suffix: &str) -> bool {
    let n = suffix.chars().count();
    w.len() >= n && w[w.len() - n..].iter().copied().eq(suffix.chars())
}

/// `w` without its last `n` letters, plus `replacement`.
fn replace_tail(w: &[char], n: usize, replacement: &str) -> Vec<char> {
    w[..w.len() - n].iter().copied().chain(replacement.chars()).collect()
}

/// A suffix rule: suffix, replacement, condition on the stem (`None`: always).
type Rule<'a> = (&'static str, &'static str, Option<&'a dyn Fn(&[char]) -> bool>);

/// NLTK's `_apply_rule_list`: the first rule whose suffix matches decides; if its
/// condition fails the word is returned unchanged.
fn apply_rules(w: Vec<char>, rules: &[Rule<'_>]) -> Vec<char> {
    for &(suffix, replacement, cond) in rules {
        if ends_with(&w, suffix) {
            let stem = &w[..w.len() - suffix.len()];
            return if cond.is_none_or(|c| c(stem)) { replace_tail(&w, suffix.len(), replacement) } else { w };
        }
    }
    w
}

fn positive_measure(stem: &[char]) -> bool {
    measure(stem) > 0
}

fn measure_gt_1(stem: &[char]) -> bool {
    measure(stem) > 1
}

fn step1a(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "ies") && w.len() == 4 {
        return replace_tail(&w, 3, "ie");
    }
    apply_rules(w, &[("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)])
}

fn step1b(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "ied") {
        return replace_tail(&w, 3, if w.len() == 4 { "ie" } else { "i" });
    }
    if ends_with(&w, "eed") {
        let stem = &w[..w.len() - 3];
        return if measure(stem) > 0 { replace_tail(&w, 3, "ee") } else { w };
    }
    let Some(stem) = ["ed", "ing"]
        .into_iter()
        .filter(|s| ends_with(&w, s))
        .map(|s| w[..w.len() - s.len()].to_vec())
        .find(|stem| contains_vowel(stem))
    else {
        return w;
    };
    for (suffix, replacement) in [("at", "ate"), ("bl", "ble"), ("iz", "ize")] {
        if ends_with(&stem, suffix) {
            return replace_tail(&stem, suffix.len(), replacement);
        }
    }
    if ends_double_consonant(&stem) {
        let last = stem[stem.len() - 1];
        return if matches!(last, 'l' | 's' | 'z') { stem } else { stem[..stem.len() - 1].to_vec() };
    }
    if measure(&stem) == 1 && ends_cvc(&stem) {
        return replace_tail(&stem, 0, "e");
    }
    stem
}

fn step1c(w: Vec<char>) -> Vec<char> {
    let cond = |stem: &[char]| stem.len() > 1 && consonant_flags(stem)[stem.len() - 1];
    apply_rules(w, &[("y", "i", Some(&cond))])
}

fn step2(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "alli") && positive_measure(&w[..w.len() - 4]) {
        return step2(replace_tail(&w, 4, "al"));
    }
    let pm: &dyn Fn(&[char]) -> bool = &positive_measure;
    let logi_cond = |_: &[char]| positive_measure(&w[..w.len() - 3]);
    let rules: [Rule<'_>; 22] = [
        ("ational", "ate", Some(pm)),
        ("tional", "tion", Some(pm)),
        ("enci", "ence", Some(pm)),
        ("anci", "ance", Some(pm)),
        ("izer", "ize", Some(pm)),
        ("bli", "ble", Some(pm)),
        ("alli", "al", Some(pm)),
        ("entli", "ent", Some(pm)),
        ("eli", "e", Some(pm)),
        ("ousli", "ous", Some(pm)),
        ("ization", "ize", Some(pm)),
        ("ation", "ate", Some(pm)),
        ("ator", "ate", Some(pm)),
        ("alism", "al", Some(pm)),
        ("iveness", "ive", Some(pm)),
        ("fulness", "ful", Some(pm)),
        ("ousness", "ous", Some(pm)),
        ("aliti", "al", Some(pm)),
        ("iviti", "ive", Some(pm)),
        ("biliti", "ble", Some(pm)),
        ("fulli", "ful", Some(pm)),
        ("logi", "log", Some(&logi_cond)),
    ];
    apply_rules(w.clone(), &rules)
}

fn step3(w: Vec<char>) -> Vec<char> {
    let pm: &dyn Fn(&[char]) -> bool = &positive_measure;
    apply_rules(
        w,
        &[
            ("icate", "ic", Some(pm)),
            ("ative", "", Some(pm)),
            ("alize", "al", Some(pm)),
            ("iciti", "ic", Some(pm)),
            ("ical", "ic", Some(pm)),
            ("ful", "", Some(pm)),
            ("ness", "", Some(pm)),
        ],
    )
}

fn step4(w: Vec<char>) -> Vec<char> {
    let gt1: &dyn Fn(&[char]) -> bool = &measure_gt_1;
    let ion = |stem: &[char]| measure(stem) > 1 && matches!(stem.last(), Some('s' | 't'));
    apply_rules(
        w,
        &[
            ("al", "", Some(gt1)),
            ("ance", "", Some(gt1)),
            ("ence", "", Some(gt1)),
            ("er", "", Some(gt1)),
            ("ic", "", Some(gt1)),
            ("able", "", Some(gt1)),
            ("ible", "", Some(gt1)),
            ("ant", "", Some(gt1)),
            ("ement", "", Some(gt1)),
            ("ment", "", Some(gt1)),
            ("ent", "", Some(gt1)),
            ("ion", "", Some(&ion)),
            ("ou", "", Some(gt1)),
            ("ism", "", Some(gt1)),
            ("ate", "", Some(gt1)),
            ("iti", "", Some(gt1)),
            ("ous", "", Some(gt1)),
            ("ive", "", Some(gt1)),
            ("ize", "", Some(gt1)),
        ],
    )
}

fn step5a(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "e") {
        let stem = &w[..w.len() - 1];
        let m = measure(stem);
        if m > 1 || (m == 1 && !ends_cvc(stem)) {
            return stem.to_vec();
        }
    }
    w
}

fn step5b(w: Vec<char>) -> Vec<char> {
    if ends_with(&w, "ll") && measure(&w[..w.len() - 1]) > 1 {
        return w[..w.len() - 1].to_vec();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porter_by_hand() {
        for (w, s) in [
            ("running", "run"),
            ("studies", "studi"),
            ("studied", "studi"),
            ("study", "studi"),
            ("generously", "gener"),
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "tie"),
            ("hopping", "hop"),
            ("filing", "file"),
            ("relational", "relat"),
            ("dying", "die"),
            ("enjoy", "enjoy"),
            ("controlling", "control"),
        ] {
            assert_eq!(porter_stem(w), s, "{w}");
        }
    }
}
