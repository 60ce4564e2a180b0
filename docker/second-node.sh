#!/usr/bin/env bash
# A second Docker engine on this machine, as a second swarm node for trying PLACE=swarm across nodes: its own
# network namespace (a veth pair, 10.77.0.0/24), its own hostname (a UTS namespace), data root, exec root,
# managed containerd and cgroup parent, sharing this machine's disks (so results/, STATES and data/ are at
# the same paths on both nodes, as NFS would make them). It joins this engine's swarm as a worker and gets
# the engine images from a tarball (make images-save). Root only; everything it makes, `down` removes.
# (nsenter, not `ip netns exec`: that remounts /sys, and the cgroup mounts under it with it.)
# Usage: docker/second-node.sh up [IMAGES_TAR] | down
set -euo pipefail
ns=ark2 name=${NODE2_NAME:-$(hostname)-2} root=/var/lib/docker-ark2 run=/run/docker-ark2
sock=unix://$run/docker.sock
d2() { docker -H "$sock" "$@"; }
case "${1:?usage: second-node.sh up [IMAGES_TAR] | down}" in
up)
  [ "$(id -u)" = 0 ] || { echo "second-node: root only" >&2; exit 2; }
  ip netns add $ns
  ip link add ark2-h type veth peer name ark2-n
  ip link set ark2-n netns $ns
  ip addr add 10.77.0.1/24 dev ark2-h && ip link set ark2-h up
  ip netns exec $ns sh -c 'ip addr add 10.77.0.2/24 dev ark2-n && ip link set ark2-n up && ip link set lo up &&
                           ip route add default via 10.77.0.1'
  mkdir -p $root $run
  # a configuration file of its own: this machine's daemon.json would name the first engine's data root
  echo "{\"data-root\": \"$root\", \"storage-driver\": \"fuse-overlayfs\"}" > $run/daemon.json
  unshare --uts sh -c "hostname $name; exec nsenter --net=/run/netns/$ns dockerd --config-file $run/daemon.json \
    --exec-root $run --pidfile $run/dockerd.pid -H $sock --bridge none --iptables=false --ip-masq=false \
    --cgroup-parent ark2" > $run.log 2>&1 &
  for _ in $(seq 60); do d2 info >/dev/null 2>&1 && break; sleep 1; done
  d2 info --format 'second-node: {{.Name}} up ({{.NCPU}} CPUs, {{.Driver}})'
  manager=$(docker info --format '{{.Swarm.NodeAddr}}')
  token=$(docker swarm join-token -q worker)
  d2 swarm join --advertise-addr 10.77.0.2 --token "$token" "$manager:2377"
  [ -z "${2:-}" ] || { echo "second-node: loading $2"; d2 load -q -i "$2"; }
  docker node ls ;;
down)
  d2 swarm leave --force 2>/dev/null || true
  [ -f $run/dockerd.pid ] && kill "$(cat $run/dockerd.pid)" 2>/dev/null && sleep 5 || true
  docker node ls --format '{{.ID}} {{.Hostname}} {{.Status}}' | awk -v n="$name" '$2 == n {print $1}' |
    xargs -r docker node rm --force
  pkill -9 -f "$run/" 2>/dev/null || true          # its containerd and shims, should the engine have died
  awk -v r="$run" -v d="$root" '$2 ~ "^" r || $2 ~ "^" d {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
  ip link del ark2-h 2>/dev/null || true
  ip netns del $ns 2>/dev/null || true
  rm -rf $root $run $run.log ;;
esac
