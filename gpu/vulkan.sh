#!/usr/bin/env bash
# Builds llama.cpp's Vulkan backend (libggml-vulkan.so) from the llama.cpp
# sources hearth links, into DEST, for hearth to load like `make gpu`'s CUDA
# module. Usage: gpu/vulkan.sh LLAMA_SRC BUILD_DIR DEST
#
# Debian 12's Vulkan headers (1.3.239) are older than the vendored
# ggml-vulkan.cpp needs (vk::LayerSettingEXT: 1.3.261 and later). The
# headers alone (libvulkan-dev and spirv-headers, 1.4.309) come from Debian
# 13 (trixie) instead: apt reads trixie's index, which it checks against
# the Debian archive keyring, downloads the two packages (apt checks each
# file's SHA-256 from that index; the pins below check it again), and they
# are unpacked into target/vulkan-sdk, not installed. The system keeps its
# own loader (libvulkan1), shader compiler (glslc) and drivers (Mesa, with
# lavapipe, a Vulkan device on the CPU), installed with apt.
set -euo pipefail
trap 'echo "make vulkan: stopped at gpu/vulkan.sh line $LINENO: $BASH_COMMAND" >&2' ERR
src=$1 build=$2 dest=$3
sdk=target/vulkan-sdk
pins="libvulkan-dev=1.4.309.0-1 8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a
spirv-headers=1.6.1+1.4.309.0-1 dc18db866d63680351c40ac6b6bece34cb52da64a7799ce1cc4f16f6bff4d064"

missing=""
command -v glslc >/dev/null 2>&1 || missing="$missing glslc"
[ -e /usr/lib/x86_64-linux-gnu/libvulkan.so.1 ] || [ -e /usr/lib64/libvulkan.so.1 ] || [ -e /usr/lib/libvulkan.so.1 ] || missing="$missing libvulkan1"
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || missing="$missing mesa-vulkan-drivers"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "make vulkan: missing:$missing; install them with: sudo apt-get install -y$missing" >&2
    exit 1
  fi
fi

if [ ! -f "$sdk/.done" ]; then
  apt_dir=$PWD/target/vulkan-apt
  rm -rf "$sdk" "$apt_dir"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$sdk"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" > "$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update -qq
  (cd "$apt_dir" && apt-get "${apt_opts[@]}" download -qq $(echo "$pins" | cut -d' ' -f1))
  while read -r pin sum; do
    deb=$(ls "$apt_dir/${pin%%=*}_"*.deb)
    echo "$sum  $deb" | sha256sum --check --quiet
    dpkg-deb -x "$deb" "$sdk"
  done <<< "$pins"
  touch "$sdk/.done"
fi

# The loader's development link (libvulkan.so) is not installed; name the
# library itself.
loader=""
for lib in /usr/lib/x86_64-linux-gnu/libvulkan.so.1 /usr/lib64/libvulkan.so.1 /usr/lib/libvulkan.so.1; do
  [ -e "$lib" ] && { loader=$lib; break; }
done
echo "configuring the Vulkan backend from $src"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_VULKAN=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
  -DVulkan_INCLUDE_DIR="$PWD/$sdk/usr/include" -DVulkan_LIBRARY="$loader" \
  -DCMAKE_PREFIX_PATH="$PWD/$sdk/usr" >/dev/null
cmake --build "$build" --config Release --target ggml-vulkan -j "$(nproc)" >/dev/null
mkdir -p "$dest"
install -m 0755 "$build/bin/libggml-vulkan.so" "$dest/libggml-vulkan.so"
echo "installed $dest/libggml-vulkan.so; point [engine] backends_dir at $dest (check with: hearth doctor)"
