#!/bin/busybox sh
# PID 1 of the test VM's initramfs (busybox-static). Loads the virtio/9p/ext4 modules, mounts
# the host's / read-only over 9p as the new root with tmpfs on /tmp, /root and /run, an ext4
# scratch disk on /var/tmp (tmpfs has no user xattrs before 6.6) and the run's output share on
# /mnt, then switches root and runs /mnt/job.sh (written by run.sh).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.list); do insmod "/modules/$m" 2>/dev/null; done
die() { echo "cordon-vm: $*"; echo o > /proc/sysrq-trigger; sleep 10; }
mkdir -p /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /newroot \
  || die "cannot mount the host root (9p)"
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mount -t tmpfs -o mode=0700 tmpfs /newroot/root
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
mount -t ext4 /dev/vda /newroot/var/tmp || die "cannot mount the scratch disk"
chmod 1777 /newroot/var/tmp
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=512000 out /newroot/mnt \
  || die "cannot mount the output share"
ip link set lo up
hostname cordon-vm
mount --move /dev /newroot/dev
mount --move /sys /newroot/sys
mount --move /proc /newroot/proc
exec switch_root /newroot /bin/sh /mnt/job.sh
