"""The seed study's SGEMM kernels (RTX 4090, stage 02: docs/FACTS.md S8) described as access patterns.

The seed did not publish its source; the designs below are read off its median CSV (threads
per block, block and grid dimensions, shared memory) and its ptxas/SASS reports: k3 a 32x32
shared tile, k3c PMPP coarsening by 4, k4 a 32x32 tile with 8 outputs per thread (128 threads),
k5 a 32x128 tile with 8x4 outputs per thread (128 threads, 20,480 B of shared memory), k6 = k5
with float4. tests_kernels checks that these patterns reproduce the seed's own per-FMA counts
(its dist / bcast / ldg / req_per_fma / ai columns) before pricing anything with them."""

from __future__ import annotations

from pytest_anatomy.kernels.access import (
    GemmAccess,
    coalesced_access,
    naive_access,
    tiled_access,
)

SEED_SGEMM: dict[str, GemmAccess] = {
    "k1": naive_access(),
    "k2": coalesced_access(),
    "k3": tiled_access("k3", 32, 32),
    "k3c": tiled_access("k3c", 32, 32, coarsen=4),
    "k4": tiled_access("k4", 32, 32, tm=8, tn=1),
    "k5": tiled_access("k5", 32, 128, tm=8, tn=4),
    "k6": tiled_access("k6", 32, 128, tm=8, tn=4, vector=4),
}
SEED_INSTRUCTION_FIT = ("k2", "k3", "k4")  # docs/FACTS.md S8: "fitted on K2, K3, K4"
SEED_REQUEST_FIT = ("k2",)
SEED_CLOCK_HZ = 2.52e9  # the clock the seed's beat column and FP32 peak use (fingerprint.txt)
