"""`llama_plan.py --dry-run`: the measure phase's timeline and whether it fits the budget (kept apart from the
plan for size; `plan` is the llama_plan module)."""

from __future__ import annotations

from typing import Any


def dry_run(plan: Any, args: Any) -> int:
    """The measure phase's timeline from EST: the background thread's file-ready times, the foreground in
    plan.MEASURE_ORDER waiting for them; a run that would not fit is marked, as the plan would skip it."""
    have = list(plan.MODELS)
    bg_t, ready = 0.0, {}  # background clock; (model, weights) -> when its file is written
    print(f"{'run':70s} {'est s':>6s} {'ends s':>7s}")
    for m in (m for m in have if not m.tiny):
        for q in plan.QUANT_TYPES:
            bg_t += plan.est_quantize(m, q) - plan.EST["header-vocab"]  # the file is ready before its header is read
            ready[(m.id, q)] = bg_t
            print(f"{m.id + '.' + q.lower() + '.quantize':70s} {plan.est_quantize(m, q):6.0f} {bg_t:7.0f} background")
    bg_t += sum(plan.EST["header-vocab"] for m in have if not m.tiny for _ in (*plan.QUANT_TYPES, "F16"))
    print(f"{'header reads of the 0.5B and 7B files':70s} {'':6s} {bg_t:7.0f} background")
    t = 0.0
    rows = [(f"{m.id}.{q.lower()}.quantize", plan.EST["quantize-small"]) for m in have if m.tiny for q in plan.QUANT_TYPES]
    rows += [(f"{m.id}.f16.header", plan.est_header(m)) for m in have if m.tiny]
    for rid, est in rows:
        t += est
        print(f"{rid:70s} {est:6.0f} {t:7.0f}")
    for kind, model, weights in plan.MEASURE_ORDER:
        if kind == "bench":
            m = next(x for x in plan.MODELS if x.id == model)
            rid, est = f"{model}.{weights.lower()}.bench", plan.est_bench(m)
        else:
            case = next(c for c in plan.SERVERS if c.id == model)
            rid, est, weights, model = case.id, plan.est_server(case), case.weights, case.model
        wait = ready.get((model, weights), 0.0)
        note = f"waits for its file until {wait:.0f} s" if wait > t else ""
        t = max(t, wait) + est
        print(f"{rid:70s} {est:6.0f} {t:7.0f} {note}{'  (over budget: skipped)' if t > args.budget_s else ''}")
    end = max(t, bg_t)
    print(f"estimate {end:.0f} s (foreground {t:.0f} s, background {bg_t:.0f} s) against --budget-s "
          f"{args.budget_s:.0f} s; runs that do not fit are written as skipped")
    return 0 if end <= args.budget_s else 1
