"""ladder_repeat.py's sentences (split out 2026-12-07 with its tables, ladder_repeat_runs.py, to keep each module under
500 lines): what each repeated rung's runs' engines show, quoting ladder_repeat_runs.ENGINE through format fields
(ladder_repeat.why fills them), so every number they quote is one test_ladder_repeat.py recomputes."""

from __future__ import annotations

from ladder_repeat_runs import LLAMA, QWEN

# What the runs' engines show, per rung ({a}: run 1's ENGINE, {b}: run 2's, {c}: run 3's, {d}: run 4's; {oa}/{ob}/{oc}/
# {od}: the other model's same rung)
# The parent a run on a later card divides by where no parent ran beside it (ladder_repeat.why passes it to the
# sentences as {first_card_parent} too)
FIRST_CARD_PARENT = "the parent's first run, on the first visit's card"
WHY: dict[tuple[str, str, str], str] = {
    (QWEN, "rag", "fp8_kv"): (
        f"Run 2 (2026-12-07, card GPU-8f2eaa92) divides by {FIRST_CARD_PARENT} "
        "(no fp8_weights ran in its batch or on its "
        "card). Its decode step repeated run 1's ({b[step_n]} against {a[step_n]} ms at 16; fp8_weights "
        "{a[parent_step_n]}), but its prompt windows ran shorter: median {b[window]} ms against run 1's {a[window]} "
        "and the parent's {a[parent_window]}, TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms (parent "
        "{a[parent_ttft_p50_s]}), ITL p99 {b[itl_p99_s]} against {a[itl_p99_s]} (parent {a[parent_itl_p99_s]}): the "
        "TTFT p50 and ITL p99 gains, inside 20% in run 1, fall below it in run 2. As on chat, whether fp8 KV or this "
        "card shortened the graph-less prompt-carrying steps is not separable (the parent ran on another card); why "
        "is unknown."),
    (LLAMA, "rag", "fp8_kv"): (
        f"Run 2 (2026-12-07, card GPU-8f2eaa92) divides by {FIRST_CARD_PARENT} "
        "(no fp8_weights ran in its batch or on its "
        "card). Its decode step is run 1's ({b[step_n]} against {a[step_n]} ms at 16; fp8_weights "
        "{a[parent_step_n]}), but its prompt windows ran far shorter: median {b[window]} ms against run 1's "
        "{a[window]} and the parent's {a[parent_window]}, TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms (parent "
        "{a[parent_ttft_p50_s]}), TTFT p99 {b[ttft_p99_s]} against {a[ttft_p99_s]}, ITL p99 {b[itl_p99_s]} against "
        "{a[itl_p99_s]} (parent {a[parent_itl_p99_s]}): the TTFT and ITL p99 gains, inside 20% in run 1, fall below "
        "it in run 2, as the chat fp8_kv runs moved Llama-3.1-8B's windows one way on one card and the other way on "
        "another. Whether fp8 KV or this card shortened them is not separable (the parent ran on another card); why "
        "is unknown."),
    (QWEN, "chat", "prefix_cache"): (
        "On a fresh machine run 2's graph-less prompt windows ran shorter, median {b[window]} ms against run 1's "
        "{a[window]} (limits: {a[parent_window]}), TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms, the opening burst "
        "{b[burst_steps]} steps in {b[burst_ms]} ms against {a[burst_steps]} in {a[burst_ms]} (limits: "
        "{a[parent_burst_steps]} in {a[parent_burst_ms]}), and every gain of run 2 agrees with its prediction within 20%. "
        f"Run 2's parent is {FIRST_CARD_PARENT}, "
        "so whether the cache or the machine shortened the windows is not separable."),
    (LLAMA, "chat", "prefix_cache"): (
        "Run 2's prompt windows are run 1's length (median {b[window]} against {a[window]} ms; limits {a[parent_window]}) "
        "and TTFT p50 moved little ({b[ttft_p50_s]} against {a[ttft_p50_s]} ms), but its opening burst took "
        "{b[burst_steps]} steps in {b[burst_ms]} ms against run 1's {a[burst_steps]} in {a[burst_ms]} (limits: "
        "{a[parent_burst_steps]} in {a[parent_burst_ms]}): the steps the cache removes were removed, each remaining one "
        "longer on this machine, so TTFT p99's gain, inside 20% in run 1, misses in run 2. Why this machine's burst steps "
        f"are longer is unknown (run 2's parent is {FIRST_CARD_PARENT})."),
    (QWEN, "chat", "fp8_kv"): (
        "Run 2's prompt windows are shorter again, and by more: median {b[window]} ms against run 1's {a[window]} and the "
        f"parent's {{a[parent_window]}} ({FIRST_CARD_PARENT}: no fp8_weights ran beside run 2); "
        "ITL p99 {b[itl_p99_s]} against "
        "{a[itl_p99_s]} ms, and the opening burst {b[burst_steps]} steps in {b[burst_ms]} ms against {a[burst_ms]} (parent "
        "{a[parent_burst_ms]}), which moves TTFT p99 outside 20% where run 1's agreed. Whether fp8 KV or this card "
        "shortened the graph-less prompt steps is not separable from these runs."),
    (LLAMA, "chat", "fp8_kv"): (
        "Run 2's prompt windows did not lengthen: median {b[window]} ms against run 1's {a[window]} and the parent's "
        f"{{a[parent_window]}} ({FIRST_CARD_PARENT}: no fp8_weights ran beside run 2); "
        "TTFT p50 {b[ttft_p50_s]} against "
        "{a[ttft_p50_s]} ms and ITL p99 {b[itl_p99_s]} against {a[itl_p99_s]}, both inside 20% of the predicted 1.0 in run "
        "2. The cause test repeat (another card) lengthened them as run 1 did; on this card they kept fp8_weights' "
        "length. Why is unknown."),
    (QWEN, "chat", "eager"): (
        "On run 2's card Qwen2.5-7B's eager step is longer and no longer flat in the batch: {b[step_1]} ms for one "
        "sequence and {b[step_n]} for 32 against run 1's {a[step_1]} and {a[step_n]}, while the graph step of 32 repeated "
        "({b[parent_step_n]} against {a[parent_step_n]} ms); TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms. "
        "Llama-3.1-8B's eager step on the same card repeated its first run's ({ob[step_n]} against {oa[step_n]} ms at 32): "
        "the host-bound step's length is not the model's alone, and why Qwen's grew with the batch here is unknown. ITL "
        "p99, inside 20% in run 1, misses in run 2 with the longer step."),
    (LLAMA, "chat", "eager"): (
        "The eager step repeated: a pure decode step of 32 takes {b[step_n]} ms against run 1's {a[step_n]} (one sequence "
        "{b[step_1]} against {a[step_1]}), eager's TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms. What moved the "
        "TTFT p50 gain is its parent: run 2's fp8_kv (its batch) has TTFT p50 {b[parent_ttft_p50_s]} ms against run 1's "
        "parent's {a[parent_ttft_p50_s]} (the fp8-KV window lengthening did not recur on this card)."),
    (QWEN, "rag", "eager"): (
        "As on chat, Qwen2.5-7B's eager step on run 2's card is longer and grows with the batch: {b[step_1]} ms for one "
        "sequence and {b[step_n]} for 16 against run 1's {a[step_1]} and {a[step_n]}; TTFT p50 {b[ttft_p50_s]} against "
        f"{{a[ttft_p50_s]}} ms. Both runs divide by the same fp8_kv run ({FIRST_CARD_PARENT}; graph step of 16 "
        "{a[parent_step_n]} ms), so run 2's gains carry a card's difference too; Llama-3.1-8B's eager step on the same card "
        "repeated ({ob[step_n]} against {oa[step_n]} ms at 16). Why Qwen's grew is unknown. TTFT p99 (the second-largest "
        "of 96), inside 20% in run 1, misses in run 2."),
    (LLAMA, "rag", "eager"): (
        "The eager step repeated: {b[step_n]} ms at 16 sequences against run 1's {a[step_n]} (one sequence {b[step_1]} "
        f"against {{a[step_1]}}), TTFT p50 {{b[ttft_p50_s]}} against {{a[ttft_p50_s]}} ms, over the same parent "
        f"({FIRST_CARD_PARENT}). TTFT p99, the second-largest of 96 requests "
        "({a[ttft_p99_s]} -> {b[ttft_p99_s]} ms), "
        "agrees with its prediction in run 2: why that one request moved is unknown."),
    (QWEN, "chat", "ngram"): (
        "Run 2 drafted exactly as run 1 (identical counters and stream: E and the prediction are run 1's). Its steps are "
        "slower: a pure verify step of 32 takes {b[step_n]} ms against {a[step_n]} (the parent's decode step "
        "{b[parent_step_n]} against {a[parent_step_n]}), and ITL p50 rose {a[itl_p50_s]} -> {b[itl_p50_s]} ms, more than "
        "the pure steps did (why is unknown), which moves ITL p50, throughput and goodput outside 20% where run 1's agreed "
        "(slower steps: h200-ngram-verify-steps-serial). TTFT p50 {b[ttft_p50_s]} against the parent's "
        "{b[parent_ttft_p50_s]} ms (run 1: {a[ttft_p50_s]} against {a[parent_ttft_p50_s]}): still short of the predicted "
        "growth. The opening burst went the other way: {b[burst_ms]} ms against the parent's {b[parent_burst_ms]} (run 1: "
        "{a[burst_ms]} against {a[parent_burst_ms]}), so TTFT p99 agrees in run 2 and the shorter burst did not repeat. "
        "ITL p99 {b[itl_p99_s]} against {a[itl_p99_s]} ms; its tail again one-token chunks ({b[tail_one]} of "
        "{b[tail_tokens]} tokens, {b[tail_early]} early in a request)."),
    (LLAMA, "chat", "ngram"): (
        "Run 2 drafted exactly as run 1. Its verify step of 32 takes {b[step_n]} ms against {a[step_n]} (the parent's "
        "decode step {b[parent_step_n]} against {a[parent_step_n]}), and the parent changed more than the rung: run 2's "
        "fp8_kv (its batch) has TTFT p50 {b[parent_ttft_p50_s]} and ITL p99 {b[parent_itl_p99_s]} ms against run 1's "
        "parent's {a[parent_ttft_p50_s]} and {a[parent_itl_p99_s]} (the fp8-KV lengthening did not recur on this card), "
        "while ngram's own are {b[ttft_p50_s]} and {b[itl_p99_s]} against {a[ttft_p50_s]} and {a[itl_p99_s]} ms. So the "
        "TTFT p50 and ITL p99 gains rose, ITL p99's outside 20% (its tail one-token chunks early in the requests, "
        "{b[tail_one]} of {b[tail_tokens]} tokens, {b[tail_early]} early: h200-ngram-itl-tail-is-undrafted-steps), and "
        "goodput's fell outside 20% with the slower steps. The opening burst is longer again, by more: {b[burst_ms]} ms "
        "against the parent's {b[parent_burst_ms]} (run 1: {a[burst_ms]} against {a[parent_burst_ms]})."),
    (QWEN, "rag", "ngram"): (
        "Run 2 drafted exactly as run 1; its verify step of 16 takes {b[step_n]} ms against {a[step_n]} over the same "
        f"parent ({FIRST_CARD_PARENT}, decode step {{a[parent_step_n]}} ms), ITL p50 {{b[itl_p50_s]}} against "
        "{a[itl_p50_s]} ms: ITL p50, ITL p99, throughput and goodput repeated. TTFT p99, the second-largest of 96 requests, "
        "is {b[ttft_p99_s]} ms against run 1's {a[ttft_p99_s]}: inside 20% in run 1, just outside in run 2, each inside "
        "the other's band: the gain sits at the target's edge, which one run's p99 cannot resolve."),
    (LLAMA, "rag", "ngram"): (
        "Run 2 drafted exactly as run 1, over the same parent ({first_card_parent}). Its verify step of 16 is "
        "faster: {b[step_n]} ms "
        "against {a[step_n]} (the parent's decode step {a[parent_step_n]}), ITL p50 {b[itl_p50_s]} against {a[itl_p50_s]} "
        "ms, TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]}: this card's serial host time is shorter, so ITL p50's and "
        "goodput's gains moved toward the predictions by more than run 1's intervals allow; every miss kept its side."),
    (QWEN, "chat", "fp8_weights"): (
        f"Run 2 (the third start's card) divides by {FIRST_CARD_PARENT} "
        "(prefix_cache ran in neither its batch nor on its "
        "card). Its engine start was slower throughout: a pure decode step of 32 takes {b[step_n]} ms against run 1's "
        "{a[step_n]} (the parent's bf16 step {a[parent_step_n]}), ITL p50 {b[itl_p50_s]} against {a[itl_p50_s]} ms, the "
        "median prompt window {b[window]} against {a[window]} ms (parent {a[parent_window]}), TTFT p50 {b[ttft_p50_s]} "
        "against {a[ttft_p50_s]}: the windows fp8 shortened in run 1 are hardly shorter than the parent's, so both TTFT "
        "gains agree with the predicted 1.0 and ITL p50, throughput and goodput miss on the slow side. The fp8_kv run "
        "beside it (same batch and card) decoded at run 1's speed (4.58 ms at 32), so the slow steps are this engine "
        "start's, not the card's; why is unknown."),
    (LLAMA, "chat", "fp8_weights"): (
        "Run 2's decode step repeated run 1's ({b[step_n]} against {a[step_n]} ms at 32; ITL p50 {b[itl_p50_s]} against "
        "{a[itl_p50_s]}), but its prompt windows did not shorten: median {b[window]} ms against run 1's {a[window]} and "
        f"the parent's {{a[parent_window]}} ({FIRST_CARD_PARENT}), "
        "TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms, so "
        "the TTFT gains run 1 missed by (h200-fp8-weights-shorten-prompt-steps) agree with the predicted 1.0 in run 2, "
        "and ITL p99 ({b[itl_p99_s]} against {a[itl_p99_s]} ms) misses by less. The shortening did not repeat on this "
        "card; why is unknown."),
    (LLAMA, "rag", "limits"): (
        f"Run 2 divides by {FIRST_CARD_PARENT} "
        "(baseline ran in neither its batch nor on its card): median prompt window "
        "{b[window]} ms against run 1's {a[window]}, ITL p99 {b[itl_p99_s]} against {a[itl_p99_s]} ms (baseline "
        "{a[parent_itl_p99_s]}), TTFT p99 {b[ttft_p99_s]} against {a[ttft_p99_s]} ms: the graph-less prompt-carrying "
        "steps and their ITL p99 excess repeated."),
    (LLAMA, "rag", "prefix_cache"): (
        "Run 2 divides by its batch's limits run: median prompt window {b[window]} ms against run 1's {a[window]} "
        "(limits {b[parent_window]} and {a[parent_window]}), TTFT p50 {b[ttft_p50_s]} against {a[ttft_p50_s]} ms, ITL p99 "
        "{b[itl_p99_s]} against {a[itl_p99_s]} (limits {b[parent_itl_p99_s]} and {a[parent_itl_p99_s]}): the cached "
        "prompt steps ran as long again.")}
# The 2026-12-07 starts (card GPU-8f2eaa92; eager and ngram over their batch's fp8_kv, where the earlier rag runs
# divided by the first visit's fp8_kv on another card, so today's ratios carry the parent's own move too): what their
# engines show
DEC7: dict[tuple[str, str, str], str] = {
    (QWEN, "chat", "fp8_kv"): (
        " Run 4 (2026-12-07, card GPU-8f2eaa92) divides by {first_card_parent} (no fp8_weights ran on its card): "
        "its windows "
        "shortened further than in any earlier run, median {d[window]} ms against that parent's {d[parent_window]}, "
        "TTFT p50 {d[ttft_p50_s]} ms, ITL p99 {d[itl_p99_s]}, opening burst {d[burst_steps]} steps in {d[burst_ms]} ms "
        "(parent {d[parent_burst_ms]}), so TTFT p99 and ITL p99 fall below 20% again. Why this start's prompt steps "
        "were the shortest of four is unknown."),
    (LLAMA, "chat", "fp8_kv"): (
        " Run 4 (2026-12-07, card GPU-8f2eaa92) divides by {first_card_parent}, as run 2 did, and repeated run 2: "
        "median prompt "
        "window {d[window]} ms against that parent's {d[parent_window]}, TTFT p50 {d[ttft_p50_s]} ms, ITL p99 "
        "{d[itl_p99_s]}, opening burst {d[burst_steps]} steps in {d[burst_ms]} ms (parent {d[parent_burst_ms]}): every "
        "gain inside 20%."),
    (QWEN, "chat", "ngram"): (
        " Run 3 (2026-12-07, card GPU-8f2eaa92) drafted exactly as runs 1 and 2, over its batch's fp8_kv: a verify "
        "step of 32 takes {c[step_n]} ms (the parent's decode step {c[parent_step_n]}), ITL p50 {c[itl_p50_s]} ms, "
        "TTFT p50 {c[ttft_p50_s]} against the parent's {c[parent_ttft_p50_s]}, ITL p99 {c[itl_p99_s]} against "
        "{c[parent_itl_p99_s]} (tail {c[tail_one]} of {c[tail_tokens]} tokens one-token chunks, {c[tail_early]} "
        "early). "
        "Its opening burst took {c[burst_ms]} ms against the parent's {c[parent_burst_ms]} (the shortest fp8_kv burst "
        "of four runs), so TTFT p99's gain lies above its prediction where run 1's lay below it: the burst's length "
        "relative to its parent changed sign from start to start, so run 3's miss is h200-ngram-opening-burst-longer's "
        "and run 1's stays h200-ngram-opening-burst-shorter's (one finding per side); why the sign changed is "
        "unknown."),
    (LLAMA, "chat", "ngram"): (
        " Run 3 (2026-12-07, card GPU-8f2eaa92) drafted exactly as runs 1 and 2, over its batch's fp8_kv: a verify "
        "step of 32 takes {c[step_n]} ms (the parent's decode step {c[parent_step_n]}), ITL p50 {c[itl_p50_s]} ms, "
        "TTFT p50 {c[ttft_p50_s]} against the parent's {c[parent_ttft_p50_s]}, ITL p99 {c[itl_p99_s]} against "
        "{c[parent_itl_p99_s]} (tail {c[tail_one]} of {c[tail_tokens]} tokens one-token chunks, {c[tail_early]} "
        "early), "
        "opening burst {c[burst_ms]} ms against the parent's {c[parent_burst_ms]}. ITL p50 rose run by run "
        "({a[itl_p50_s]}, {b[itl_p50_s]}, {c[itl_p50_s]} ms) while the verify step did not, so throughput's gain, "
        "inside 20% in runs 1 and 2, falls outside it in run 3 (with goodput's); why ITL p50 grew is unknown."),
    (QWEN, "rag", "eager"): (
        " Run 3 (2026-12-07, card GPU-8f2eaa92) divides by its batch's fp8_kv and ran run 1's size: a pure eager step "
        "of 16 takes {c[step_n]} ms against {a[step_n]} and {b[step_n]} (one sequence {c[step_1]}; the graph step "
        "{c[parent_step_n]}), TTFT p50 {c[ttft_p50_s]} ms against its parent's {c[parent_ttft_p50_s]}; Llama-3.1-8B's "
        "eager step on this card was the shortest of its three ({oc[step_n]} ms)."),
    (LLAMA, "rag", "eager"): (
        " Run 3 (2026-12-07, card GPU-8f2eaa92) divides by its batch's fp8_kv, and its eager step was shorter: "
        "{c[step_n]} ms at 16 against {a[step_n]} and {b[step_n]} (one sequence {c[step_1]}; the graph step "
        "{c[parent_step_n]}), TTFT p50 {c[ttft_p50_s]} ms against its parent's {c[parent_ttft_p50_s]}, TTFT p99 "
        "{c[ttft_p99_s]}. With the step under the rag SLO's 25 ms ITL, most tokens met it, so goodput's gain rose from "
        "runs 1 and 2's few percent (and ITL p50's fell) by far more than their intervals allow: the host-bound step's "
        "length moves with the engine start (h200-eager-steps-host-bound's claim), and its size did not repeat across "
        "three starts; why this start's was shorter is unknown."),
    (QWEN, "rag", "ngram"): (
        " Run 3 (2026-12-07, card GPU-8f2eaa92) drafted exactly as runs 1 and 2 and divides by its batch's fp8_kv: a "
        "verify step of 16 takes {c[step_n]} ms (the parent's decode step {c[parent_step_n]}), ITL p50 {c[itl_p50_s]} "
        "ms, TTFT p99 {c[ttft_p99_s]}: the steps repeated; ITL p99's gain rose because its parent, that batch's fp8_kv "
        "(its run 2), had the shorter prompt windows and ITL p99 the earlier parent did not."),
    (LLAMA, "rag", "ngram"): (
        " Run 3 (2026-12-07, card GPU-8f2eaa92) drafted exactly as runs 1 and 2 and divides by its batch's fp8_kv: its "
        "verify step of 16 is the fastest of three, {c[step_n]} ms (the parent's decode step {c[parent_step_n]}), ITL "
        "p50 {c[itl_p50_s]} ms, TTFT p50 {c[ttft_p50_s]}, so ITL p50's gain moved further toward the prediction than "
        "run 2's band allows; every miss kept its side.")}
# The third start (2026-12-05, card GPU-2d2b522c, each rung over its card's parent): what its engines show
THIRD: dict[tuple[str, str, str], str] = {
    (QWEN, "chat", "fp8_kv"): (
        " Run 3 ran over its own batch's fp8_weights, as the plan asked: median prompt window {c[window]} ms against "
        "that parent's {c[parent_window]}, ITL p99 {c[itl_p99_s]} ms, opening burst {c[burst_steps]} steps in "
        "{c[burst_ms]} ms (parent {c[parent_burst_ms]}). Its parent was a slow start (fp8_weights' run 2: TTFT p50 "
        "49.16 ms against run 1's 33.33), which moves the TTFT p50 gain below 20% in run 3."),
    (LLAMA, "chat", "fp8_kv"): (
        " Run 3 ran over the same card's fp8_weights (the third start's first call): its windows shortened, median "
        "{c[window]} ms against that parent's {c[parent_window]} (run 1 lengthened them, run 2 kept the first visit's "
        "parent's length), TTFT p50 {c[ttft_p50_s]} ms, ITL p99 {c[itl_p99_s]}: every gain inside 20%. Which way fp8 KV "
        "moves Llama-3.1-8B's graph-less prompt windows is not a fixed property of the engine: it differed on each of "
        "three cards (and the cause test repeat's)."),
    (QWEN, "chat", "eager"): (
        " Run 3 (a third card) ran run 1's size: a pure decode step of 32 takes {c[step_n]} ms against {a[step_n]} and "
        "{b[step_n]} (one sequence {c[step_1]}, a handful of steps), the graph step {c[parent_step_n]}; TTFT p50 "
        "{c[ttft_p50_s]} ms against its parent's {c[parent_ttft_p50_s]}. Llama-3.1-8B's eager step on this card grew "
        "instead ({oc[step_n]} against {oa[step_n]} and {ob[step_n]} ms at 32): the host-bound step's length moves with "
        "the engine start in either model."),
    (LLAMA, "chat", "eager"): (
        " Run 3 (a third card) did not repeat it: a pure decode step of 32 takes {c[step_n]} ms (one sequence "
        "{c[step_1]}), eager's TTFT p50 {c[ttft_p50_s]} against its parent's {c[parent_ttft_p50_s]} ms, so ITL p50, "
        "throughput and goodput move past run 1's and run 2's bands on the slow side, while Qwen2.5-7B's eager step on "
        "this card went back to its first run's ({oc[step_n]} ms): the host-bound step's length moves with the engine "
        "start in either model; the batches' host facts (CPU model and counts) do not tell the starts apart.")}

# A repeat's miss on the side its rung's finding does not claim (ladder_repeat.SLOWER): what the runs measured, keyed by
# (model, workload, rung, metric); formatted with each run's ENGINE numbers as a, b, c, d.
OPPOSITE: dict[tuple[str, str, str, str], str] = {
    (QWEN, "chat", "eager", "ttft_p99_s"): (
        "Eager's TTFT p99 is its opening burst, and on run 3's card the burst of the eager engine was the shortest of "
        "its three ({c[burst_steps]} steps in {c[burst_ms]} ms, against {a[burst_ms]} and {b[burst_ms]}) while its "
        "parent's (fp8_kv, graphs, the same batch) was the longest of its runs ({c[parent_burst_ms]} ms against "
        "{a[parent_burst_ms]} and {b[parent_burst_ms]}), in {c[parent_burst_steps]} steps as in every run: the "
        "burst's steps were shorter in one engine and longer in the other on the same card."),
}

# The 2026-12-07 17:09 starts (card GPU-65905dee; eager and ngram over their batch's fp8_kv, fp8_kv over the first
# visit's fp8_weights): what their engines show, {n} being that run's ENGINE numbers (ladder_repeat.why)
DEC7B: dict[tuple[str, str, str], str] = {
    (QWEN, "chat", "fp8_kv"): (
        " Run 5 (2026-12-07 17:17, card GPU-65905dee) divides by {first_card_parent}: its windows lengthened, median "
        "{n[window]} ms against that parent's {n[parent_window]}, the first of five runs to run them longer than their "
        "parent; TTFT p50 {n[ttft_p50_s]} ms, ITL p99 {n[itl_p99_s]}, opening burst {n[burst_steps]} steps in "
        "{n[burst_ms]} ms (parent {n[parent_burst_ms]}). Why this start's prompt steps ran longer is unknown."),
    (LLAMA, "chat", "fp8_kv"): (
        " Run 5 (2026-12-07 17:17, card GPU-65905dee) divides by {first_card_parent}, as runs 2 and 4 did, and "
        "repeated run 1: median prompt window {n[window]} ms against that parent's {n[parent_window]} (run 1: "
        "{a[window]}), TTFT p50 {n[ttft_p50_s]} ms, ITL p99 {n[itl_p99_s]}, and its opening burst lengthened too, "
        "{n[burst_steps]} steps in {n[burst_ms]} ms against the parent's {n[parent_burst_ms]}, so TTFT p99, throughput "
        "and goodput miss 20% on the slow side as well. Lengthened in runs 1 and 5, kept or shortened in runs 2-4: "
        "which way fp8 KV moves this model's graph-less prompt steps changes from start to start."),
    (QWEN, "chat", "eager"): (
        " Run 4 (2026-12-07 17:19, card GPU-65905dee, over its batch's fp8_kv): a pure eager step of 32 takes "
        "{n[step_n]} ms (one sequence {n[step_1]}; the graph step {n[parent_step_n]}), TTFT p50 {n[ttft_p50_s]} ms "
        "against its parent's {n[parent_ttft_p50_s]}, opening burst {n[burst_steps]} steps in {n[burst_ms]} ms "
        "against the parent's {n[parent_burst_ms]}: the long step of run 2 ({b[step_n]} ms) again, not runs 1 and "
        "3's ({a[step_n]}, {c[step_n]})."),
    (LLAMA, "chat", "eager"): (
        " Run 4 (2026-12-07 17:23, card GPU-65905dee, over its batch's fp8_kv): a pure eager step of 32 takes "
        "{n[step_n]} ms (one sequence {n[step_1]}; the graph step {n[parent_step_n]}), the longest of four, TTFT p50 "
        "{n[ttft_p50_s]} ms against its parent's {n[parent_ttft_p50_s]}: the host-bound step's length moves with the "
        "engine start again."),
    (QWEN, "chat", "ngram"): (
        " Run 4 (2026-12-07 17:21, card GPU-65905dee) drafted exactly as runs 1-3, over its batch's fp8_kv: a verify "
        "step of 32 takes {n[step_n]} ms (the parent's decode step {n[parent_step_n]}), ITL p50 {n[itl_p50_s]} ms, "
        "TTFT p50 {n[ttft_p50_s]} against the parent's {n[parent_ttft_p50_s]}, ITL p99 {n[itl_p99_s]} against "
        "{n[parent_itl_p99_s]} (tail {n[tail_one]} of {n[tail_tokens]} tokens one-token chunks, {n[tail_early]} "
        "early), opening burst {n[burst_ms]} ms against the parent's {n[parent_burst_ms]}: longer than its parent's, "
        "as in run 3, so TTFT p99's gain lies above its prediction again."),
    (LLAMA, "chat", "ngram"): (
        " Run 4 (2026-12-07 17:25, card GPU-65905dee) drafted exactly as runs 1-3, over its batch's fp8_kv: a verify "
        "step of 32 takes {n[step_n]} ms (the parent's decode step {n[parent_step_n]}), ITL p50 {n[itl_p50_s]} ms "
        "(runs 1-3: {a[itl_p50_s]}, {b[itl_p50_s]}, {c[itl_p50_s]}), TTFT p50 {n[ttft_p50_s]} against the parent's "
        "{n[parent_ttft_p50_s]}, ITL p99 {n[itl_p99_s]} against {n[parent_itl_p99_s]} (tail {n[tail_one]} of "
        "{n[tail_tokens]} tokens one-token chunks, {n[tail_early]} early), opening burst {n[burst_ms]} ms against "
        "the parent's {n[parent_burst_ms]}."),
    (QWEN, "rag", "fp8_kv"): (
        " Run 3 (2026-12-07 17:10, card GPU-65905dee) divides by {first_card_parent}: its prompt windows ran longer "
        "than that parent's, median {n[window]} ms against {n[parent_window]}, TTFT p50 {n[ttft_p50_s]} against "
        "{n[parent_ttft_p50_s]} ms, TTFT p99 {n[ttft_p99_s]}, ITL p99 {n[itl_p99_s]} against {n[parent_itl_p99_s]}, "
        "while the decode step of 16 barely moved ({n[step_n]} against {n[parent_step_n]} ms): the gains it misses are "
        "the prompt windows'."),
    (LLAMA, "rag", "fp8_kv"): (
        " Run 3 (2026-12-07 17:15, card GPU-65905dee) divides by {first_card_parent} and kept its windows: median "
        "{n[window]} ms against {n[parent_window]}, TTFT p50 {n[ttft_p50_s]} against {n[parent_ttft_p50_s]} ms, TTFT "
        "p99 {n[ttft_p99_s]}, ITL p99 {n[itl_p99_s]} against {n[parent_itl_p99_s]}, decode step of 16 {n[step_n]} "
        "against {n[parent_step_n]} ms: near run 1's (window {a[window]} ms), not run 2's shortened ones "
        "({b[window]})."),
    (QWEN, "rag", "eager"): (
        " Run 4 (2026-12-07 17:12, card GPU-65905dee, over its batch's fp8_kv): a pure eager step of 16 takes "
        "{n[step_n]} ms (one sequence {n[step_1]}; the graph step {n[parent_step_n]}), run 2's size ({b[step_n]}) "
        "rather than runs 1 and 3's ({a[step_n]}, {c[step_n]}), TTFT p50 {n[ttft_p50_s]} ms against its parent's "
        "{n[parent_ttft_p50_s]}."),
    (LLAMA, "rag", "eager"): (
        " Run 4 (2026-12-07 17:16, card GPU-65905dee, over its batch's fp8_kv): a pure eager step of 16 takes "
        "{n[step_n]} ms (one sequence {n[step_1]}; the graph step {n[parent_step_n]}), the longest of four, TTFT p50 "
        "{n[ttft_p50_s]} ms against its parent's {n[parent_ttft_p50_s]}, TTFT p99 {n[ttft_p99_s]}; above the rag "
        "SLO's 25 ms ITL, so goodput's gain fell to its lowest of four (run 3's shorter step had raised it)."),
    (QWEN, "rag", "ngram"): (
        " Run 4 (2026-12-07 17:14, card GPU-65905dee) over its batch's fp8_kv: a verify step of 16 takes {n[step_n]} "
        "ms (the parent's decode step {n[parent_step_n]}), longer than any earlier run's, so ITL p50 {n[itl_p50_s]} ms "
        "and its gain rose past the other runs' (TTFT p99 {n[ttft_p99_s]} ms). Llama-3.1-8B's rag ngram did not run "
        "(the plan's budget)."),
}
