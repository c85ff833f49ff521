"""Hand-written CUDA kernel ladders: one .cu file per rung under cuda/, one registry per
ladder (kernels/sgemm.py, reduction.py, fused.py; all of them in kernels/ladders.py: LADDERS).
Pure Python: nothing here imports torch or CUDA (measure/kernel_runner.py launches the kernels,
emulator/ runs them on a CPU). This package file imports nothing, so the runner can use
registry.py and reference.py without pulling in the ledgers (measure never imports theory)."""
