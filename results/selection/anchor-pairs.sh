#!/usr/bin/env bash
# The pairs the sweep's report does not draw: dense-loaded cells (every loaded
# neuron computed, phi = gamma) against the reference, against dense-loaded without
# compensation and against phi 0.4 on the same slice (the loading's cost, the
# compensation's effect on the loading alone, the selective computation's cost);
# the layer range (SmolLM2 10..24 at gamma 0.507, Gemma 4..14 at 0.58) against the
# paper's selection at 0.7 (the same FFN bytes); alpha 0.1 / 0.4 against 0.2 at gamma 0.55 (the chained refit is in
# chained-pairs.sh, the decode corrections in decode-pairs.sh). The sweep's cells of
# `experiments/selection-gemma3.yaml` (or, with MODEL=smollm2,
# `selection-smollm2.yaml`), paired with `selectinfer pair`; a pair whose cells have
# not run is left out. Writes results/selection/anchor-pairs-gemma3.md
# (anchor-pairs-smollm2.md).
set -euo pipefail
SI=${SI:-selectinfer}
MODEL=${MODEL:-gemma3}
. "$(dirname "$0")/sweep-outputs.sh"
out=results/selection/anchor-pairs-$MODEL.md
case $MODEL in smollm2) range=0.507-layers10-24; layers=10..24; at=0.507;; gemma3) range=0.58-layers4-14; layers=4..14; at=0.58;; esac
dense() { cell "$1" ".$1-load$2" dense-loaded; }              # dense TASK SLICE
phi() { cell "$1" ".$1-load$2" selectinfer 0.4 "${3:-0.2}" "${4:-}"; } # phi TASK SLICE [ALPHA] [DECODE]
report() {
    header "Dense-loaded anchors, layer range and alpha" anchor-pairs.sh
    echo "Dense-loaded computes every loaded neuron; \"phi 0.4\" is the selective computation"
    echo "on the same slice; \"decode refit\" is today's default (\`--decode-refit 1\` on a refit slice)."
    for t in qa translate summarize; do
        local ref; ref=$(cell "$t" "" reference)
        for g in 0.7 0.55; do
            pair "$t, gamma $g: dense-loaded (A) against the reference (B)" "$(dense "$t" "$g")" "$ref" "$t"
            pair "$t, gamma $g: dense-loaded (A) against phi 0.4 on the same slice (B)" "$(dense "$t" "$g")" "$(phi "$t" "$g")" "$t"
            pair "$t, gamma $g: dense-loaded refit (A) against the reference (B)" "$(dense "$t" "$g-refit")" "$ref" "$t"
            pair "$t, gamma $g: dense-loaded refit (A) against dense-loaded without compensation (B)" "$(dense "$t" "$g-refit")" "$(dense "$t" "$g")" "$t"
            pair "$t, gamma $g: dense-loaded refit (A) against the refit at phi 0.4 with the decode refit (B)" "$(dense "$t" "$g-refit")" "$(phi "$t" "$g-refit" 0.2 decode-refit=1)" "$t"
        done
        pair "$t, gamma 0.7: dense-loaded mean compensation (A) against dense-loaded without (B)" "$(dense "$t" 0.7-compensate)" "$(dense "$t" 0.7)" "$t"
        pair "$t, gamma 0.7: dense-loaded mean compensation (A) against dense-loaded refit (B)" "$(dense "$t" 0.7-compensate)" "$(dense "$t" 0.7-refit)" "$t"
        pair "$t: layers $layers at gamma $at (A) against the default layers at 0.7, the same FFN bytes (B)" "$(phi "$t" "$range")" "$(phi "$t" 0.7)" "$t"
        for a in 0.1 0.4; do
            pair "$t, gamma 0.55: alpha $a (A) against 0.2 (B)" "$(phi "$t" 0.55 "$a")" "$(phi "$t" 0.55)" "$t"
        done
    done
}
write_whole "$out" report
