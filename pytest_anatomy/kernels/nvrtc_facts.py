"""What the device's compiler makes of the kernels whose compiled facts the registry took from nvcc.

Until 2026-12-04 21:50 the CPU checks compiled with nvcc 13.0.88 (and the NVRTC 13.5 wheel for a smoke compile),
while the device compiles with NVRTC 13.0.88 (every kernels batch's provenance). The two allocate differently: the
device spilled s16 (2026-12-04 20:21, a 96-byte stack frame, 19 LDL in its main K loop) and s13 (in every batch since
its first run), which no check here saw. Since then compile.py compiles with NVRTC, pinned to the device's version, so
the numbers the tests read are the ones the device ran.

The registry's nvcc counts below are inputs of predictions written before their runs (S9_TILE_SPACE, S13_TILE_SPACE,
MMA_LOOP_BODY, the rungs' ffma_share), so they stay as written; this module states what NVRTC 13.0.88 compiles beside
them, and test_kernels_compiled / test_kernels_autotune / test_kernels_issue_ledger / test_kernels_s15 /
test_kernels_s16 check every number against the compiler. A prediction written from now on prices these.
"""

from __future__ import annotations

# The NVRTC every kernels batch of the H200 recorded (provenance.versions["nvidia-cuda-nvrtc"]); pyproject's `kernels`
# extra pins it and test_nvrtc_is_the_devices checks both against the latest batch.
DEVICE_NVRTC = "13.0.88"

# Stack frame, spill-store and spill-load bytes (ptxas -v) where the device's compile spills, by rung or tuner
# candidate id; every other kernel compiles without a stack frame. nvcc 13.0.88 spilled none of these.
SPILLS: dict[str, tuple[int, int, int]] = {
    "s13-fp32-multistage": (32, 32, 32),
    "s13-tile-128x128x16-s3-b2": (32, 32, 32),  # s13 itself
    "s13-tile-64x128x16-s4-b4": (40, 36, 36),
    "s16-fp32-ktile32": (96, 248, 296),
}
SPILLED_SOURCES = {"sgemm/s13_fp32_multistage.cu": SPILLS["s13-fp32-multistage"],
                   "sgemm/s16_fp32_ktile32.cu": SPILLS["s16-fp32-ktile32"]}

# The tuner candidates' compiled K loop on the N % 4 == 0 side: (FFMA, instructions). Their predictions divide by the
# nvcc share in S9_TILE_SPACE / S13_TILE_SPACE (equal only for s9-tile-128x256x8-b1).
TILE_LOOPS: dict[str, tuple[int, int]] = {
    "s9-tile-128x128x16-b2": (1024, 1205),  # nvcc: 1,204 (0.8505)
    "s9-tile-128x128x8-b2": (512, 623),     # nvcc: 0.8298
    "s9-tile-128x64x16-b4": (1024, 1320),   # nvcc: 0.8172
    "s9-tile-64x128x16-b4": (1024, 1257),   # nvcc: 0.8050
    "s9-tile-128x256x8-b1": (512, 601),     # nvcc: 0.8519, the same loop
    "s9-tile-256x64x16-b2": (1024, 1229),   # nvcc: 0.8318
    "s9-tile-64x64x32-b4": (2048, 2810),    # nvcc: 0.7275
    "s9-tile-128x128x16-b1": (1024, 1207),  # nvcc: 0.8505
    "s13-tile-128x128x16-s3-b2": (1024, 1272),  # nvcc: 1,246 (0.8218); 7 of them LDL
    "s13-tile-128x128x8-s4-b2": (512, 672),     # nvcc: 0.7926
    "s13-tile-64x128x16-s4-b4": (1024, 1287),   # nvcc: 0.8101; 7 of them LDL
    "s13-tile-128x256x8-s3-b1": (512, 640),     # nvcc: 0.8258
}
# Warps per SM where the device's registers give another count than the candidate's prediction took: 179 registers
# (the tuner's own run recorded 179 on the H200, 2026-12-01 21:51), 5 blocks of 2 warps; priced at 12 (nvcc: 167).
TILE_WARPS: dict[str, int] = {"s9-tile-64x64x32-b4": 10}

# The fp32 rungs' compiled K loops (N % 4 == 0 side; s16 its whole-k-tile loop): (FFMA, instructions, LDL + STL).
RUNG_LOOPS: dict[str, tuple[int, int, int]] = {
    "s13-fp32-multistage": (1024, 1272, 7),        # header (nvcc): 1,246, share 0.8218
    "s15-fp32-thread-tile-8x16": (1024, 1166, 0),  # header (nvcc): 1,163, share 0.8805
    "s16-fp32-ktile32": (2048, 2407, 22),          # header (nvcc): 2,311, share 0.8862; 19 LDL + 3 STL
}
# The mma rungs' K loop per warp and k-tile (K % 8 == 0 side): (instructions, HMMA or HGMMA); the mma ledger's
# pre-registrations priced MMA_LOOP_BODY's nvcc counts (157, 168, 133).
MMA_LOOPS: dict[str, tuple[int, int]] = {
    "s10-bf16-ldmatrix": (164, 32),
    "s11-bf16-warp64": (169, 64),
    "s12-bf16-wgmma": (128, 2),
}
# s14's consumers' K loop: (HGMMA, instructions); its header (nvcc) says 87.
S14_LOOP = (4, 85)


def share(loop: tuple[int, ...]) -> float:
    """FFMA over instructions of a (FFMA, instructions, ...) loop count."""
    return loop[0] / loop[1]
