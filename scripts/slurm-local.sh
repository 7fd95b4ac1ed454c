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
# SLURMD_PORT (17818). Runs as root.
set -euo pipefail
BASE=${BASE:-/tmp/sdm-slurm}
NCPU=${NCPU:-8}
CTLD_PORT=${CTLD_PORT:-17817}
SLURMD_PORT=${SLURMD_PORT:-17818}
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
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SrunPortRange=60001-60400
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$BASE/run/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$BASE/state/ctld
SlurmdSpoolDir=$BASE/state/slurmd
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
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
TmpFS=$BASE/tmp
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$NCPU RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
  # A fresh cluster each time: job ids restart at 1, so stale step sockets
  # in the spool directory would make new steps fail.
  rm -rf "$BASE"/state/ctld/* "$BASE"/state/slurmd "$BASE"/tmp/*
  mkdir -p "$BASE/state/slurmd"
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  for _ in $(seq 150); do
    [ "$(sinfo -h -o %T 2>/dev/null | sort -u | tr -d '\n')" = idle ] && break
    sleep 0.1
  done
  if [ "$(sinfo -h -o %T 2>/dev/null | sort -u | tr -d '\n')" != idle ]; then
    echo "slurm-local: the node did not come up; see $BASE/log" >&2
    exit 1
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

down() {
  if [ -f "$BASE/run/slurmctld.pid" ] && alive "$(cat "$BASE/run/slurmctld.pid")"; then
    scancel --full --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
  fi
  stop_pidfile "$BASE/run/slurmd.pid"
  stop_pidfile "$BASE/run/slurmctld.pid"
  stop_pidfile "$BASE/run/munged.pid"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) [ -f "$SLURM_CONF" ] && sinfo -h >/dev/null 2>&1 ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
