#!/bin/sh
# cxlvm guest, stage 1 (initramfs, busybox): modules, the host's root over
# 9p (read-only), writable layers, network, then the agent as PID 1.
export PATH=/bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
. /cxlvm.conf
i=${CXLVM_GUEST:-0}
say() { read -r up _ < /proc/uptime; echo "cxlvm-init[$i] $up: $*" > /dev/console; }
fail() { say "FAILED: $*"; sleep 2; poweroff -f; }
say "stage 1"
while read -r m; do insmod "/lib/modules/$m" || fail "insmod $m"; done < /modules.list
say "modules loaded"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 cxlroot /newroot \
	|| fail "mount 9p root"
mount -t tmpfs -o mode=0755,size=64m tmpfs /newroot/run || fail "tmpfs /run"
mkdir -p /newroot/run/cxlvm/ov
for d in etc root var; do
	mkdir -p /newroot/run/cxlvm/ov/$d/u /newroot/run/cxlvm/ov/$d/w
	mount -t overlay overlay -o lowerdir=/newroot/$d,upperdir=/newroot/run/cxlvm/ov/$d/u,workdir=/newroot/run/cxlvm/ov/$d/w /newroot/$d \
		|| fail "overlay /$d"
done
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mount -t tmpfs -o mode=1777 tmpfs /newroot/var/tmp
# the repository again, uncached (what the host rebuilds shows at once),
# after the tmpfs mounts: a checkout under /tmp must not be hidden by them
if [ -n "$CXLVM_REPO" ]; then
	mkdir -p "/newroot$CXLVM_REPO" 2>/dev/null
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 cxlrepo "/newroot$CXLVM_REPO" \
		|| fail "mount 9p $CXLVM_REPO"
fi
k=0
for p in $CXLVM_RW; do
	mkdir -p "/newroot$p" 2>/dev/null   # under /tmp, say: now a tmpfs
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rw$k "/newroot$p" || fail "mount rw $p"
	k=$((k+1))
done
name=$CXLVM_PREFIX$i
hostname "$name"
echo "$name" > /newroot/etc/hostname
read -r uuid < /proc/sys/kernel/random/uuid
echo "${uuid//-/}" > /newroot/etc/machine-id
{
	echo "127.0.0.1 localhost"
	echo "$CXLVM_HOST_IP cxlvm-host $CXLVM_HOST_NAME"
	n=0
	while [ $n -lt "$CXLVM_GUESTS" ]; do
		echo "$CXLVM_SUBNET.$((n+1)) $CXLVM_PREFIX$n"
		n=$((n+1))
	done
} > /newroot/etc/hosts
ip link set lo up
ip link set eth0 up && ip addr add "$CXLVM_SUBNET.$((i+1))/24" dev eth0 \
	&& ip route add default via "$CXLVM_HOST_IP" || fail "network"
cp /agent.py /newroot/run/cxlvm/agent.py
cp /cxlvm.conf /newroot/run/cxlvm/guest.conf
echo "CXLVM_GUEST=$i" >> /newroot/run/cxlvm/guest.conf
say "root mounted, starting the agent"
mount --move /dev /newroot/dev
mkdir -p /newroot/dev/shm /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /newroot/dev/pts
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
exec switch_root /newroot /usr/bin/python3 -S /run/cxlvm/agent.py
fail "switch_root"
