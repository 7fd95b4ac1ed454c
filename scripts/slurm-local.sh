#!/usr/bin/env bash
# A private single-node SLURM cluster on this machine, for sdm's tests and
# demos: munged, slurmctld and one slurmd, from Debian's packages, with no
# systemd and nothing outside $BASE. The node declares more CPUs than the
# machine has (NCPU, default 8) so that 8 tasks fit on a small machine.
#
#   scripts/slurm-local.sh up      # then: export SLURM_CONF=$BASE/etc/slurm.conf
#   scripts/slurm-local.sh down
#   scripts/slurm-local.sh status  # exit 0 when the cluster answers
#
# Environment: BASE (/tmp/sdm-slurm), NCPU (8), CTLD_PORT (17817),
# SLURMD_PORT (17818), SRUN_PORTS (60001-60400). Runs as root.
#
# With NETNS_NODES="h1 h2 ..." (scripts/cluster.sh sets it), the nodes are
# those hosts instead: one slurmd in each one's network namespace
# (/run/netns/NAME), with its own hostname, at the address that
# /etc/hosts gives the name; the controller listens on CTLD_ADDR, the
# address the namespaces reach this machine at.
set -euo pipefail
BASE=${BASE:-/tmp/sdm-slurm}
NCPU=${NCPU:-8}
CTLD_PORT=${CTLD_PORT:-17817}
SLURMD_PORT=${SLURMD_PORT:-17818}
SRUN_PORTS=${SRUN_PORTS:-60001-60400}
NETNS_NODES=${NETNS_NODES:-}
CTLD_ADDR=${CTLD_ADDR:-127.0.0.1}
HOST=$(hostname -s)
export SLURM_CONF="$BASE/etc/slurm.conf"

alive() { # running and not a zombie
  local s
  s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ]
}

stop_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if [ -n "$pid" ] && alive "$pid"; then
    kill -TERM "$pid"
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -KILL "$pid"; fi
  fi
  rm -f "$f"
}

up() {
  if [ -f "$BASE/run/munged.pid" ] && alive "$(cat "$BASE/run/munged.pid")"; then
    if sinfo -h >/dev/null 2>&1; then
      echo "slurm-local: already up in $BASE"
      echo "export SLURM_CONF=$SLURM_CONF"
      exit 0
    fi
    echo "slurm-local: $BASE holds a cluster that does not answer (run: $0 down)" >&2
    exit 1
  fi
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || { echo "slurm-local: $tool not found: apt-get install slurm-wlm munge" >&2; exit 1; }
  done
  mkdir -p "$BASE"/{etc,run,log,state/ctld,munge,tmp}
  # munged insists that every directory above its socket be searchable.
  chmod 755 "$BASE" "$BASE/run"
  chmod 700 "$BASE/munge"
  if [ ! -s "$BASE/munge/munge.key" ]; then
    dd if=/dev/urandom of="$BASE/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$BASE/munge/munge.key"
  fi
  munged --socket="$BASE/run/munge.socket" --key-file="$BASE/munge/munge.key" \
         --pid-file="$BASE/run/munged.pid" --log-file="$BASE/log/munged.log" \
         --seed-file="$BASE/munge/munged.seed"
  for _ in $(seq 100); do [ -S "$BASE/run/munge.socket" ] && break; sleep 0.05; done

  cat > "$SLURM_CONF" <<CONF
ClusterName=sdmtest
SlurmctldHost=$HOST($CTLD_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SrunPortRange=$SRUN_PORTS
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$BASE/run/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$BASE/state/ctld
SlurmdSpoolDir=$BASE/state/slurmd-%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
InactiveLimit=0
KillWait=5
MinJobAge=30
SlurmctldTimeout=30
SlurmdTimeout=30
Waittime=0
TmpFS=$BASE/tmp/%n
CONF
  # A fresh cluster each time: job ids restart at 1, so stale step sockets
  # in the spool directory would make new steps fail.
  rm -rf "$BASE"/state/ctld/* "$BASE"/state/slurmd-* "$BASE"/tmp/*
  if [ -z "$NETNS_NODES" ]; then
    echo "NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$NCPU RealMemory=1000 State=UNKNOWN" >> "$SLURM_CONF"
  else
    for n in $NETNS_NODES; do
      addr=$(getent hosts "$n" | awk '{print $1; exit}')
      [ -n "$addr" ] || { echo "slurm-local: $n has no address in /etc/hosts" >&2; exit 1; }
      echo "NodeName=$n NodeAddr=$addr CPUs=$NCPU RealMemory=1000 State=UNKNOWN" >> "$SLURM_CONF"
    done
  fi
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8" >> "$SLURM_CONF"
  # No cgroups: the tasks are tracked through /proc (proctrack/linuxproc),
  # and slurmd 23 and later would read the cgroup file system anyway,
  # which a root of another Debian release may not have as it expects.
  if [ "$(slurmd -V | awk '{split($2, v, "."); print v[1]}')" -ge 23 ]; then
    echo "CgroupPlugin=disabled" >"$(dirname "$SLURM_CONF")/cgroup.conf"
  fi
  slurmctld -f "$SLURM_CONF"
  if [ -z "$NETNS_NODES" ]; then
    mkdir -p "$BASE/state/slurmd-$HOST" "$BASE/tmp/$HOST"
    slurmd -f "$SLURM_CONF"
  else
    for n in $NETNS_NODES; do
      mkdir -p "$BASE/state/slurmd-$n" "$BASE/tmp/$n"
      # nsenter, not ip netns exec: that remounts /sys, where slurmd needs
      # the cgroup file system.
      nsenter --net="/run/netns/$n" unshare --uts sh -c "hostname $n; exec slurmd -f '$SLURM_CONF' -N $n"
    done
  fi
  for _ in $(seq 150); do
    [ "$(sinfo -h -o %T 2>/dev/null | sort -u | tr -d '\n')" = idle ] && break
    sleep 0.1
  done
  if [ "$(sinfo -h -o %T 2>/dev/null | sort -u | tr -d '\n')" != idle ]; then
    echo "slurm-local: the node did not come up; see $BASE/log" >&2
    down >/dev/null 2>&1 || true # nothing stays to hold the ports
    exit 1
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

down() {
  if [ -f "$BASE/run/slurmctld.pid" ] && alive "$(cat "$BASE/run/slurmctld.pid")"; then
    scancel --full --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
  fi
  for f in "$BASE"/run/slurmd-*.pid; do stop_pidfile "$f"; done
  stop_pidfile "$BASE/run/slurmctld.pid"
  stop_pidfile "$BASE/run/munged.pid"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) [ -f "$SLURM_CONF" ] && sinfo -h >/dev/null 2>&1 ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
