#!/usr/bin/env bash
# An emulated cluster on this machine, for sdm's tests across hosts and for
# trying sdm as a cluster runs it: hosts h1..hN, each a network namespace
# with its own address (10.200.K.I on a bridge sdmbrK; this machine, the
# login node, is 10.200.K.254) and, for what runs there, its own hostname. Each
# host runs a real sshd (throwaway keys, root by key only) and a slurmd of
# a SLURM whose controller runs here; launchers reach a host through the
# ssh stand-in $BASE/bin/rsh (Open MPI's plm_rsh_agent, hydra's
# -launcher-exec), sdm through real ssh ($BASE/bin/ssh).
#
#   scripts/cluster.sh up        # then: . $BASE/env (SLURM_CONF, and launchers' ssh)
#   scripts/cluster.sh down      # leaves nothing: namespaces, bridge, daemons, /etc/hosts lines, files
#   scripts/cluster.sh status    # exit 0 when every host answers
#
# Environment: BASE (/tmp/sdm-cluster), HOSTS (4). Runs as root; needs
# iproute2, util-linux (nsenter, unshare), openssh-server and -client,
# slurm-wlm and munge.
#
# K, written to $BASE/id, is the first network free on this machine: a
# cluster of another root (a chroot sharing this network stack) keeps its
# bridge, links and controller port, and this one takes the next.
set -euo pipefail
BASE=${BASE:-/tmp/sdm-cluster}
HOSTS=${HOSTS:-4}
MARK="# sdm-cluster"
HERE=$(cd "$(dirname "$0")" && pwd)
names() { for i in $(seq 1 "$HOSTS"); do printf 'h%d ' "$i"; done; }

fail() { echo "cluster: $*" >&2; exit 1; }

# network K sets the names of cluster K's bridge, links, addresses and port.
network() {
  K=$1
  NET=10.200.$K
  BRIDGE=sdmbr$K
  LINK=sdm$K-h # + host number, the host's end on the bridge
  CTLD_PORT=$((17917 + K))
}
network "$(cat "$BASE/id" 2>/dev/null || echo 0)"

# on HOST COMMAND... runs COMMAND in HOST's network namespace.
on() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }

# mine says whether this root has a cluster, up or half up.
mine() { grep -qs "$MARK" /etc/hosts || [ -e /run/netns/h1 ] || [ -e "$BASE/id" ]; }

up() {
  [ "$(id -u)" = 0 ] || fail "needs root (network namespaces, a bridge, /etc/hosts)"
  for tool in ip nsenter unshare /usr/sbin/sshd ssh ssh-keygen; do
    command -v "$tool" >/dev/null || fail "$tool not found: apt-get install iproute2 util-linux openssh-server openssh-client"
  done
  if mine; then
    status && { echo "cluster: already up in $BASE"; exit 0; }
    old=$(awk -v m="$MARK" 'index($0, m) {print $NF; exit}' /etc/hosts)
    fail "a cluster of this root, up or half up, is in ${old:-$BASE}; one runs at a time (take it down: BASE=${old:-$BASE} $0 down)"
  fi
  # A bare root may have no /etc/hosts, and so no localhost and no name
  # for this machine: Open MPI's daemons on the hosts then ask a name
  # server that no host can reach, and time out.
  [ -e /etc/hosts ] || touch /etc/hosts
  getent hosts localhost >/dev/null || echo "127.0.0.1 localhost $MARK $BASE" >> /etc/hosts
  getent hosts "$(hostname)" >/dev/null || echo "127.0.1.1 $(hostname) $MARK $BASE" >> /etc/hosts
  ip netns add sdm-probe 2>/dev/null || fail "cannot create a network namespace (a container without CAP_SYS_ADMIN?)"
  ip netns del sdm-probe
  local k=0
  while ip link show "sdmbr$k" >/dev/null 2>&1; do
    k=$((k + 1))
    [ $k -lt 200 ] || fail "no free network: bridges sdmbr0..sdmbr199 all exist"
  done
  network $k
  # Half a cluster is taken down again: nothing stays behind a failure.
  trap 'down >/dev/null 2>&1' EXIT
  mkdir -p "$BASE"/{bin,run,log,ssh}
  chmod 755 "$BASE"; chmod 700 "$BASE/ssh"
  echo "$K" > "$BASE/id"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$HOSTS"); do
    ip netns add "h$i"
    ip link add "$LINK$i" type veth peer name eth0 netns "h$i"
    ip link set "$LINK$i" master "$BRIDGE" up
    # nsenter, not ip -n: that remounts / as a slave first, which fails
    # where / is no mount point (a chroot, as a CI root may be).
    on "h$i" ip addr add "$NET.$i/24" dev eth0
    on "h$i" ip link set eth0 up
    on "h$i" ip link set lo up
    on "h$i" ip route add default via "$NET.254"
    echo "$NET.$i h$i $MARK $BASE" >> /etc/hosts
  done
  rsh_stand_in
  sshds
  NETNS_NODES="$(names)" CTLD_ADDR="$NET.254" BASE="$BASE/slurm" CTLD_PORT=$CTLD_PORT SRUN_PORTS=60401-60800 \
    "$HERE/slurm-local.sh" up >/dev/null
  status || fail "the hosts came up but do not all answer"
  environment
  trap - EXIT
  echo "export SLURM_CONF=$BASE/slurm/etc/slurm.conf"
}

# environment writes $BASE/env, what a shell sources to run sdm here as on
# a real cluster, whose ssh keys let launchers reach every node: Open
# MPI's mpirun (4's own setting, 5's PRRTE's) and Hydra's mpiexec reach
# the hosts through the stand-in, srun through this cluster's SLURM.
environment() {
  cat > "$BASE/env" <<EOF
export SLURM_CONF=$BASE/slurm/etc/slurm.conf
export OMPI_MCA_plm_rsh_agent=$BASE/bin/rsh PRTE_MCA_plm_ssh_agent=$BASE/bin/rsh
export HYDRA_LAUNCHER=rsh HYDRA_LAUNCHER_EXEC=$BASE/bin/rsh HYDRA_IFACE=$BRIDGE
EOF
}

# rsh_stand_in writes $BASE/bin/rsh: `rsh [ssh options] HOST COMMAND...`
# runs COMMAND on HOST (hI or its address) inside its namespaces.
rsh_stand_in() {
  cat > "$BASE/bin/rsh" <<EOF
#!/bin/sh
# An ssh stand-in for launchers: rsh [ssh options] HOST COMMAND...
while [ \$# -gt 0 ]; do
  case "\$1" in -l|-p|-o|-i|-F) shift 2 ;; -*) shift ;; *) break ;; esac
done
host=\$1; shift
case "\$host" in $NET.*) host=h\${host##*.} ;; esac
host=\${host%%.*}
[ -e "/run/netns/\$host" ] || { echo "rsh: no host \$host" >&2; exit 255; }
exec nsenter --net="/run/netns/\$host" unshare --uts /bin/sh -c "hostname \$host; cd '\$PWD' 2>/dev/null; \$*"
EOF
  chmod 755 "$BASE/bin/rsh"
}

# sshds starts a real sshd on every host, root by key only, and writes
# $BASE/bin/ssh, the ssh command that logs in to any of them.
sshds() {
  ssh-keygen -q -t ed25519 -N "" -f "$BASE/ssh/host" <<<y >/dev/null
  ssh-keygen -q -t ed25519 -N "" -f "$BASE/ssh/user" <<<y >/dev/null
  cp "$BASE/ssh/user.pub" "$BASE/ssh/authorized_keys"
  mkdir -p /run/sshd
  for i in $(seq 1 "$HOSTS"); do
    cat > "$BASE/ssh/sshd_h$i" <<EOF
ListenAddress $NET.$i
HostKey $BASE/ssh/host
AuthorizedKeysFile $BASE/ssh/authorized_keys
PidFile $BASE/run/sshd-h$i.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
AcceptEnv SDM_* OMPI_* PMI_*
EOF
    nsenter --net="/run/netns/h$i" unshare --uts sh -c "hostname h$i; exec /usr/sbin/sshd -f '$BASE/ssh/sshd_h$i' -E '$BASE/log/sshd-h$i.log'"
  done
  cat > "$BASE/ssh/config" <<EOF
Host *
  User root
  IdentityFile $BASE/ssh/user
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 5
EOF
  cat > "$BASE/bin/ssh" <<EOF
#!/bin/sh
exec ssh -F '$BASE/ssh/config' "\$@"
EOF
  chmod 755 "$BASE/bin/ssh"
}

status() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || return 1
  for i in $(seq 1 "$HOSTS"); do
    [ "$("$BASE/bin/ssh" "h$i" hostname 2>/dev/null)" = "h$i" ] || return 1
  done
  [ "$(SLURM_CONF=$BASE/slurm/etc/slurm.conf sinfo -h -o %T 2>/dev/null | sort -u | tr -d '\n')" = idle ]
}

down() {
  if [ -d "$BASE/slurm" ]; then
    BASE="$BASE/slurm" CTLD_PORT=$CTLD_PORT "$HERE/slurm-local.sh" down || true
  fi
  for f in "$BASE"/run/sshd-*.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  # Whatever still runs in a host's namespace (ranks, servers) ends with it.
  for ns in $(ip netns list 2>/dev/null | awk '/^h[0-9]+/{print $1}'); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  # The bridge and links are this root's only when it recorded their K;
  # otherwise they may be another root's cluster.
  if [ -e "$BASE/id" ]; then
    for i in $(seq 1 "$HOSTS"); do ip link del "$LINK$i" 2>/dev/null || true; done
    ip link del "$BRIDGE" 2>/dev/null || true
  fi
  if grep -qs "$MARK" /etc/hosts; then
    # /etc/hosts may be a bind mount: rewrite it in place.
    grep -v "$MARK" /etc/hosts > "$BASE.hosts" || true
    cat "$BASE.hosts" > /etc/hosts
    rm -f "$BASE.hosts"
  fi
  rm -rf "$BASE"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
