#!/usr/bin/env bash
# The dynamic symbols each shared library of the project defines are its
# public API and nothing else: an internal name that leaks (libcxlmpi is
# preloaded into applications) would bind to an application's own
# function or variable of that name.
#
#   test_exports.sh LIB...
#
# A library's allowed names follow from its file name:
#   libcxlshm.so*     cxl_*
#   libcxl-fi.so      fi_prov_ini (the one entry libfabric looks up)
#   libcxlmpi-*.so    MPI_* PMPI_* MPIX_* MPIS_* CXLMPI_* ACTIVE_QUEUE
# plus the linker's own (_init _fini _edata _end __bss_start).
set -uo pipefail
pass=0 fail=0
for so in "$@"; do
	case $(basename "$so") in
	libcxlshm.so*) allow='^cxl_' ;;
	libcxl-fi.so) allow='^fi_prov_ini$' ;;
	libcxlmpi-*.so) allow='^(MPI_|PMPI_|MPIX_|MPIS_|CXLMPI_|ACTIVE_QUEUE$)' ;;
	*)
		echo "FAIL: $so: no export rule for this library" >&2
		fail=$((fail + 1))
		continue
		;;
	esac
	if [ ! -f "$so" ]; then
		echo "FAIL: $so not built" >&2
		fail=$((fail + 1))
		continue
	fi
	syms=$(nm -D --defined-only "$so" | awk '{print $NF}' |
		grep -vE '^(_init|_fini|_edata|_end|__bss_start)$')
	extra=$(grep -vE "$allow" <<<"$syms")
	if [ -z "$syms" ]; then
		echo "FAIL: $so exports nothing (nm failed?)" >&2
		fail=$((fail + 1))
	elif [ -n "$extra" ]; then
		echo "FAIL: $so exports $(wc -l <<<"$extra") name(s) beyond its API:" \
			$extra >&2
		fail=$((fail + 1))
	else
		echo "$so: $(wc -l <<<"$syms") exported names, all public"
		pass=$((pass + 1))
	fi
done
echo "test_exports: $pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
