#!/bin/sh
# Installs what a build configuration needs on Debian/Ubuntu.
#   tools/install-deps.sh aarch64   cross compiler + qemu-user
#   tools/install-deps.sh clang     clang
#   tools/install-deps.sh cmake     cmake (llama-cpp-python builds with it)
#   tools/install-deps.sh mpi       Open MPI (mpicc, mpirun) for make MPI=1
#   tools/install-deps.sh fashion-mnist
#                                   the Fashion-MNIST IDX files, in
#                                   /usr/share/datasets/fashion-mnist/
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
case "$1" in
aarch64) pkgs="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" ;;
clang) pkgs="clang" ;;
cmake) pkgs="cmake" ;;
mpi) pkgs="openmpi-bin libopenmpi-dev" ;;
fashion-mnist) pkgs="dataset-fashion-mnist" ;;
*) echo "usage: $0 aarch64|clang|cmake|mpi|fashion-mnist" >&2; exit 2 ;;
esac
echo "installing: $pkgs"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs >/dev/null
