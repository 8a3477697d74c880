# Sourced by the fault tests that run as several users (root only).
# users_make: group cxltg with users cxltu1 and cxltu2, and cxltu3 outside
# it; only what does not exist yet is made, and users_remove removes only
# that (call it from an EXIT trap). as USER CMD...: CMD as USER (root: as
# is), with a HOME it may write.
made_group=0 made_users=()
users_make() {
	getent group cxltg >/dev/null || { groupadd cxltg && made_group=1; }
	for u in cxltu1 cxltu2 cxltu3; do
		if ! id "$u" >/dev/null 2>&1; then
			useradd -M -N -s /usr/sbin/nologin "$u" && made_users+=("$u")
		fi
	done
	usermod -a -G cxltg cxltu1 && usermod -a -G cxltg cxltu2
}
users_remove() {
	local u
	for u in "${made_users[@]}"; do userdel "$u" 2>/dev/null; done
	[ $made_group = 1 ] && groupdel cxltg 2>/dev/null
	return 0
}
as() {
	local u=$1
	shift
	if [ "$u" = root ]; then "$@"; else runuser -u "$u" -- env HOME=/tmp "$@"; fi
}
