#!/usr/bin/env bash
# Install what cxlmpi needs on Debian bookworm, idempotently:
#  - Debian packages, pinned to their upstream release (the Debian revision
#    may move with security updates; the upstream version may not);
#  - a project virtualenv (.venv) with the exact versions of
#    requirements.txt.
# Needs root (or sudo) only when a package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# package  upstream-version-prefix
APT_PINS=(
	"cmake 3.25.1"
	"ninja-build 1.11.1"
	"gcc 4:12.2.0"
	"clang-14 1:14.0.6"
	"libclang-rt-14-dev 1:14.0.6"
	"python3-venv 3.11.2"
	"pkgconf 1.8.1"
	"libfabric-dev 1.17.0"
	"libfabric-bin 1.17.0"
	"iproute2 6.1.0"    # ip: tools/cxlrun's namespaces, veth and bridge
	"util-linux 2.38.1" # nsenter, unshare: tools/cxlrun
	"autoconf 2.71"     # autogen.sh: tests/conformance/fabtests.sh
	"automake 1:1.16.5"
	"libtool 2.4.7"
	"curl 7.88.1"       # the fabtests release where ../shared has none
	"bzip2 1.0.8"       # its .tar.bz2
	"libpmemobj-dev 1.12.1" # cxlbench pmem: PMDK's libpmemobj (STREAM-PMem)
	# tools/cxlvm: QEMU guests that share one DAX device
	"qemu-system-x86 1:7.2"     # qemu-system-x86_64 (+ qboot, PVH boot)
	"linux-image-amd64 6.1."    # the guests' kernel and its modules
	"busybox-static 1:1.35.0"   # the guests' initramfs
	"ndctl 76.1"                # devdax namespace inside the guests
	"libsimgrid-dev 3.32"       # smpicc, smpirun: bench/simgrid/project.py
)

# Version of an installed package, or nothing. Never fails: under
# "set -e -o pipefail" a missing package must not end the script.
installed_version() {
	{ dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true; } |
		awk '$1=="install" && $3=="installed" {print $4}'
}

need=()
for pin in "${APT_PINS[@]}"; do
	read -r pkg want <<<"$pin"
	have=$(installed_version "$pkg")
	case "$have" in
	"$want"*) ;;
	*) need+=("$pkg $want") ;;
	esac
done

if ((${#need[@]})); then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null || {
			echo "setup: missing packages: ${need[*]}; run this script as root" >&2
			exit 1
		}
		sudo=sudo
	fi
	echo "setup: installing Debian packages: ${need[*]}"
	$sudo apt-get update -qq
	args=()
	for item in "${need[@]}"; do
		read -r pkg want <<<"$item"
		# newest archive version of the pinned upstream release
		ver=$(apt-cache madison "$pkg" | awk -v w="$want" \
			'index($3, w) == 1 {print $3; exit}')
		if [ -z "$ver" ]; then
			echo "setup: Debian offers no $pkg $want*; this repo is pinned to it" \
				"(scripts/setup.sh APT_PINS). Is this Debian bookworm?" >&2
			exit 1
		fi
		args+=("$pkg=$ver")
	done
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${args[@]}" >/dev/null
fi

# Project venv from Debian's python3 (not a pyenv shim), exact pins.
if [ ! -x .venv/bin/python ]; then
	/usr/bin/python3 -m venv .venv
fi
stamp=.venv/.requirements.sha256
if ! sha256sum --status -c "$stamp" 2>/dev/null; then
	.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
	sha256sum requirements.txt >"$stamp"
fi
# Open MPI in a venv of its own (same binary names as MPICH's).
if [ ! -x .venv-ompi/bin/python ]; then
	/usr/bin/python3 -m venv .venv-ompi
fi
stamp=.venv-ompi/.requirements.sha256
if ! sha256sum --status -c "$stamp" 2>/dev/null; then
	.venv-ompi/bin/pip install -q --disable-pip-version-check -r requirements-ompi.txt
	sha256sum requirements-ompi.txt >"$stamp"
fi
echo "setup: ready (apt pins ok, .venv and .venv-ompi up to date)"
