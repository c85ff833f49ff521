"""gpu_arch: a kernel's architecture requirement, and the live path's skip on a card that cannot run it."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_anatomy import gpu_arch
from pytest_anatomy.gpu_arch import NotOnThisGPU, Requirement
from pytest_anatomy.kernels.flashattn import registry as attention
from pytest_anatomy.kernels.ladders import LADDERS
from pytest_anatomy.kernels.registry import DeviceFacts
from pytest_anatomy.specs.hardware import HARDWARE
from pytest_anatomy.targets import Target

REPO = Path(__file__).resolve().parents[1]
ccs = st.tuples(st.integers(5, 12), st.integers(0, 9))


@given(ccs, ccs)
def test_a_plain_requirement_is_that_architecture_or_newer(req: tuple[int, int], cc: tuple[int, int]) -> None:
    assert Requirement(f"sm_{req[0]}{req[1]}").met_by(cc) == (cc >= req)


@given(ccs, ccs)
def test_an_arch_specific_requirement_is_that_architecture_only(req: tuple[int, int], cc: tuple[int, int]) -> None:
    assert Requirement(f"sm_{req[0]}{req[1]}a").met_by(cc) == (cc == req)


@pytest.mark.parametrize("bad", ["sm90", "sm_9", "compute_90", "sm_90b", ""])
def test_a_malformed_architecture_names_the_form(bad: str) -> None:
    with pytest.raises(ValueError, match="like sm_80 or sm_90a"):
        Requirement(bad)


def test_source_lines_parse_with_their_reasons() -> None:
    text = "/* header */\n// requires: sm_90a (wgmma)\n// requires: sm_80\nint x; // requires: sm_100 (not a line)\n"
    assert gpu_arch.parse_source(text) == (Requirement("sm_90a", "wgmma"), Requirement("sm_80", ""))
    assert gpu_arch.compile_target(gpu_arch.parse_source(text), "sm_90") == "sm_90a"
    assert gpu_arch.compile_target(gpu_arch.parse_source(text), "sm_89") == "sm_89"  # and the compile fails there


def test_the_check_raises_naming_the_kernel_the_need_and_the_card() -> None:
    with pytest.raises(NotOnThisGPU, match=r"softmax rung x6 needs sm_90 \(9\.0 or newer: clusters\); this GPU is sm_89"):
        gpu_arch.check("softmax rung x6", (Requirement("sm_90", "clusters"),), (8, 9))
    gpu_arch.check("softmax rung x6", (Requirement("sm_90", "clusters"),), (10, 0))
    gpu_arch.check("softmax rung x6", (Requirement("sm_90", "clusters"),), None)  # unknown card: tried, not skipped


def test_only_a_live_target_with_a_known_architecture_is_skipped() -> None:
    need = (Requirement("sm_90a", "wgmma"),)
    assert gpu_arch.skip_reason("s12", need, Target("card", False, compute_capability=(8, 0))) is None  # replayed
    assert gpu_arch.skip_reason("s12", need, Target("card", True)) is None  # the driver did not say
    why = gpu_arch.skip_reason("s12", need, Target("card", True, compute_capability=(10, 0)))
    assert why is not None and "s12 needs sm_90a (compute capability 9.0 exactly: wgmma); this GPU is sm_100" in why


def test_the_plan_summary_groups_kernels_by_the_architecture_they_need() -> None:
    reasons = [gpu_arch.not_here_message(w, Requirement(a, "x"), (8, 0))
               for w, a in (("sgemm rung s12 at 4096x4096x4096", "sm_90a"), ("sgemm rung s12 at 32x18944x3584", "sm_90a"),
                            ("softmax rung x6 at 8192x2048", "sm_90"), ("attention rung r7", "sm_90a"))]
    assert gpu_arch.summarize([*reasons, "some other skip"]) == (
        "sm_90a: sgemm rung s12, attention rung r7; sm_90: softmax rung x6; 1 other reason")


def test_every_catalog_card_names_its_compute_capability() -> None:
    """The live skip needs the card's architecture; a catalog entry without it would silently try every kernel."""
    assert [name for name, spec in HARDWARE.items() if spec.compute_capability is None] == []


def test_a_rung_needs_what_every_kernel_file_it_launches_needs() -> None:
    """x10 at 8,192 x 2,048 launches x7's warp-row kernel, whose file holds a cluster kernel too: the rung needs
    sm_90 there, and only its own (any-architecture) file at the vocabulary shape."""
    from pytest_anatomy.kernels import fused

    x10 = next(v for v in LADDERS["softmax"] if v.id == "x10-grid-tiles")
    facts = DeviceFacts(sm_count=132)
    assert [r.arch for r in x10.requirements(fused.SOFTMAX_TIMING_SHAPE, facts)] == ["sm_90"]
    assert x10.requirements(fused.VOCAB_SHAPE, facts) == ()
    refuser = next(v for v in LADDERS["softmax"] if v.max_cols is not None)
    assert refuser.requirements(fused.VOCAB_SHAPE, facts) == ()  # refused there: the refusal is its outcome


def test_gluon_rungs_and_only_they_need_hopper() -> None:
    assert {r.id for r in attention.LADDER if r.requires} == {r.id for r in attention.LADDER if r.dialect == "gluon"}


def test_a_live_measurement_the_card_cannot_run_is_a_skip_not_a_failure(pytester: pytest.Pytester) -> None:
    name, spec = next((n, s) for n, s in HARDWARE.items() if s.compute_capability and s.compute_capability < (9, 0))
    cc = spec.compute_capability
    pytester.makeconftest(f"""
        from pytest_anatomy.specs import hardware
        class FakeGPU:
            name = {spec.display_name!r}; catalog_name = {name!r}; compute_capability = {cc!r}
            def to_dict(self): return {{"name": self.name}}
        def pytest_configure(config):
            hardware.detect = lambda: FakeGPU()
    """)
    pytester.makepyfile(f"""
        from pytest_anatomy.gpu_arch import Requirement, check
        def live():
            check("sgemm rung s12", (Requirement("sm_90a", "wgmma"),), {cc!r})
            raise AssertionError("not reached")
        def test_live(measured):
            measured("s12", live=live)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"*sgemm rung s12 needs sm_90a*this GPU is sm_{cc[0]}{cc[1]}, so it is not measured here*"])


PLAN_ARGS = ("-p", "no:cacheprovider", "-m", "gpu", "--anatomy-source=live", "--anatomy-plan", "-q")
_MARK = "test_gpu_arch: the plan on "  # a line before each card's session output, and one after it with its exit code
# One interpreter, one pytest session per card in turn (pytest.main): the first session imports every suite's test
# modules, the later ones collect from the same modules again. A plan of every suite in a fresh interpreter was ~5 s,
# ~3.6 s of it importing the test modules; the five cards' plans this way take 11 s instead of 25 s, and each card's
# output was the fresh interpreter's, byte for byte but the timing (2026-12-06).
_PLANS = """\
import sys, pytest
args, cards = sys.argv[1:sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1:]
for card in cards:
    print(MARK + card, flush=True)
    code = pytest.main([*args, f"--anatomy-hardware={card}"])
    print(f"\\n{MARK}{card} exit {int(code)}", flush=True)
""".replace("MARK", repr(_MARK))


@functools.cache
def _plans(cards: tuple[str, ...]) -> tuple[dict[str, tuple[str, int]], str]:
    """Each card's plan output and exit code (-1: none printed), and the interpreter's stderr; once per process."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    proc = subprocess.run([sys.executable, "-c", _PLANS, *PLAN_ARGS, "--", *cards],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    plans = {}
    for card in cards:
        out, _, code = proc.stdout.partition(f"{_MARK}{card}\n")[2].partition(f"\n{_MARK}{card} exit ")
        plans[card] = (out, int(code.split()[0]) if code else -1)
    return plans, proc.stderr


def _plan(card: str) -> str:
    """`--anatomy-plan --anatomy-hardware CARD` here, without a GPU: the plan a live session on that card would make
    (session.planned_gpu), every suite's."""
    plans, stderr = _plans(tuple(name for _, name in CARDS))
    out, code = plans[card]
    assert code == 0, out[-3000:] + stderr[-3000:]
    return out


def _not_on(cc: tuple[int, int]) -> set[str]:
    """Every rung of the kernel ladders and the attention ladder that a card of `cc` cannot run at some timing shape
    (from the requirements alone; the plan reaches the same set through collection)."""
    from pytest_anatomy.kernels import fused, sgemm

    facts, out = DeviceFacts(sm_count=132), set()
    for v in (v for lad in LADDERS.values() for v in lad):
        shapes = (sgemm.TIMING_SHAPE,) if v.ladder == "sgemm" else (fused.SOFTMAX_TIMING_SHAPE, fused.VOCAB_SHAPE)
        if v.ladder in ("sgemm", "softmax") and any(gpu_arch.unmet(v.requirements(s, facts), cc) for s in shapes):
            out.add(f"{v.ladder} rung {v.id}")
    return out | {f"attention rung {r.id}" for r in attention.LADDER if gpu_arch.unmet(r.requires, cc)}


# One catalog card per architecture the catalog holds, the live target's (sm_90) among them: ~3 s a plan of every
# suite (a plan hook that breaks on a card's memory or specs fails here too).
CARDS = sorted({spec.compute_capability: name for name, spec in HARDWARE.items()}.items())


@pytest.mark.parametrize("cc, card", CARDS, ids=[f"sm_{cc[0]}{cc[1]}" for cc, _ in CARDS])
def test_the_live_plan_leaves_out_what_the_card_cannot_run_and_says_so(cc: tuple[int, int], card: str) -> None:
    out = _plan(card)
    assert f"anatomy live plan on {card} (spec: catalog (--anatomy-hardware))" in out, out[-2000:]
    assert f"no GPU here: planned for the catalog's {HARDWARE[card].display_name}" in out
    assert "was not used" not in out  # the option named the card planned for
    line = next((ln for ln in out.splitlines() if "tests skip on this card" in ln), "")
    expected = _not_on(cc)
    named = {w.strip() for part in line.split("need: ", 1)[-1].split("; ") for w in part.split(": ", 1)[-1].split(", ")
             } if line else set()
    assert named == expected, out[-2000:]


def test_a_launch_past_the_cards_shared_memory_is_a_skip_naming_both_sizes() -> None:
    with pytest.raises(NotOnThisGPU, match=r"x8 asks for 223 KiB of shared memory a block; this GPU allows 99 KiB"):
        gpu_arch.check_shared_memory("x8", 223 * 1024, 99 * 1024)
    gpu_arch.check_shared_memory("x8", 223 * 1024, 227 * 1024)
    gpu_arch.check_shared_memory("x8", 223 * 1024, None)  # the driver did not say: tried


def test_a_named_card_is_planned_for_but_never_measured_without_a_gpu(pytester: pytest.Pytester) -> None:
    """The catalog card stands in for detection only under --anatomy-plan: a live session without a GPU is still the
    one-line usage error, whatever --anatomy-hardware names (its measurements would be of no card)."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    card = next(iter(HARDWARE))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--anatomy-source=live",
                                           f"--anatomy-hardware={card}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--anatomy-source=live: no GPU detected*"])


def test_the_plan_under_xdist_prints_the_plan_and_runs_nothing() -> None:
    """`--anatomy-plan -n 2`: xdist's workers collect and run on their own, so the plan printed nothing and every
    live test ran (measured, on a GPU). The plan now starts no workers."""
    pytest.importorskip("xdist")
    card = next(iter(HARDWARE))
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "gpu", "-n", "2",
                           "--dist", "loadgroup", "--anatomy-source=live", "--anatomy-plan", f"--anatomy-hardware={card}",
                           "-q", "tests_capacity/test_capacity_ledger.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"anatomy live plan on {card}" in proc.stdout
    assert "bringing up nodes" not in proc.stdout and " passed" not in proc.stdout and " failed" not in proc.stdout
