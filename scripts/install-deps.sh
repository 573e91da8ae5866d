#!/usr/bin/env bash
# Installs the Debian 12 packages hcasim needs to build and test, when any is missing.
# Runs as root (or through sudo when available). Safe to run again.
# parallel: GNU parallel, which runs `hcasim run|sweep --list-commands` in a test (tests/sweep_test.cpp).
# perftest, ibverbs-utils and rdmacm-utils: rdma-core's programs the stock tests (ctest -R stock,
# tests/stock/stock.py) run on the verbs shim; a missing one fails its test.
# python3-pyverbs: rdma-core 44's Python bindings, which run rdma-core's provider test suite
# (third_party/rdma-core-v44/tests) on the verbs shim (ctest -L pyverbs, tests/pyverbs/pyverbs.py).
# libsodium-dev: HMAC-SHA256 and randomness of the emulated subnet's authentication (emu/auth.h).
# ucx-utils: UCX 1.13's ucx_info and ucx_perftest, which the ucx tests (ctest -L ucx) run on the
# verbs shim; without it those tests are skipped, not failed.
# libfabric-bin, libfabric-dev: libfabric 1.17's fi_info and fi_pingpong (with libfabric1, its
# verbs provider) and its headers, for the libfabric tests (ctest -L libfabric) on the verbs
# shim; without them those tests are skipped, or not built (tests/libfabric/rdm_self.c).
# openmpi-bin, libopenmpi-dev, openssh-client: Open MPI 4.1's mpirun and mpicc, for the MPI job
# over UCX on the verbs shim (ctest -L mpi); mpirun looks for an ssh agent even for local ranks.
# valgrind: memcheck under the hostile-emu cases (ctest --preset valgrind, label valgrind); its
# header valgrind/valgrind.h serves tests/forked_child.h.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libsimgrid-dev libboost-dev libboost-context-dev googletest libgtest-dev libbenchmark-dev
      libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev libnlopt-dev libnlopt-cxx-dev gnuplot-nox
      zlib1g-dev libsodium-dev libibverbs-dev librdmacm-dev python3 binutils
      perftest ibverbs-utils rdmacm-utils python3-pyverbs ucx-utils libfabric-bin libfabric-dev iproute2 util-linux parallel
      openmpi-bin libopenmpi-dev openssh-client
      clang libclang-rt-14-dev lld valgrind)
missing=()
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
