#!/usr/bin/env bash
# A real Slurm cluster on the loopback, for envkit's fleet tests: Debian's slurm-wlm + munge,
# daemons started directly as root (no systemd), one slurmctld and NODES slurmd (default 3).
#
#   .ci/slurm.sh start [NODES]   install (apt) if needed, write the config, start, wait for `sinfo` idle
#   .ci/slurm.sh stop            stop the daemons this script started
#
# Several slurmd run on one host when Slurm allows it (distinct NodeName and Port, `slurmd -N`);
# Debian's build does (checked by starting them and waiting for every node to be idle). If it did
# not, `start 1` gives one node and the tests run several tasks on it.
# State, logs and pid files live in $ENVKIT_SLURM_DIR (default /tmp/envkit-slurm); the config is
# written to /etc/slurm/slurm.conf, where sbatch, squeue, sacct and scancel look for it.
# HealthCheckProgram is $DIR/healthcheck.sh, every 5 s: it runs $DIR/healthcheck.d/<node> when a test
# put one there (`envkit health --slurm --drain` in tests/integration/test_fleet_health.py), else nothing.
set -euo pipefail

DIR=${ENVKIT_SLURM_DIR:-/tmp/envkit-slurm}
CONF=/etc/slurm/slurm.conf
PORT0=${ENVKIT_SLURMD_PORT0:-17001}

install() {
  local need=()
  for cmd in slurmctld slurmd sbatch munged; do command -v "$cmd" >/dev/null || need+=("$cmd"); done
  if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  fi
}

write_conf() {
  local nodes=$1 cpus mem host
  cpus=$(nproc)
  mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / nodes / 2))
  host=$(hostname -s)
  mkdir -p "$DIR"/state "$DIR"/log /etc/slurm
  {
    echo "# written by envkit .ci/slurm.sh: a test cluster on the loopback"
    echo "ClusterName=envkit"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "StateSaveLocation=$DIR/state"
    echo "SlurmdSpoolDir=$DIR/spool-%n"
    echo "SlurmctldPidFile=$DIR/slurmctld.pid"
    echo "SlurmdPidFile=$DIR/slurmd-%n.pid"
    echo "SlurmctldLogFile=$DIR/log/slurmctld.log"
    echo "SlurmdLogFile=$DIR/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "MinJobAge=600"
    echo "KillWait=5"
    echo "SchedulerType=sched/backfill"
    echo "SlurmctldPort=${ENVKIT_SLURMCTLD_PORT:-16817}"
    echo "HealthCheckProgram=$DIR/healthcheck.sh"
    echo "HealthCheckInterval=5"
    echo "HealthCheckNodeState=ANY"
    for i in $(seq 1 "$nodes"); do
      echo "NodeName=node$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((PORT0 + i - 1)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$CONF"
}

write_healthcheck() {
  # slurmd runs it as root for each of its nodes, with SLURMD_NODENAME set (checked: Slurm 22.05)
  mkdir -p "$DIR/healthcheck.d"
  cat >"$DIR/healthcheck.sh" <<'SH'
#!/bin/sh
dir=$(dirname "$0")
node=${SLURMD_NODENAME:-}
[ -n "$node" ] && [ -x "$dir/healthcheck.d/$node" ] && exec "$dir/healthcheck.d/$node" "$node"
exit 0
SH
  chmod 0755 "$DIR/healthcheck.sh"
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || (umask 077 && dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 status=none)
  chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  chmod 0700 /etc/munge
  chmod 0400 /etc/munge/munge.key
  if id munge >/dev/null 2>&1; then
    setsid runuser -u munge -- munged
  else
    setsid munged --force
  fi
  touch "$DIR/munged.ours"
  for _ in $(seq 1 20); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return; sleep 0.5; done
  echo "munged did not start" >&2
  exit 1
}

start() {
  local nodes=${1:-3}
  install
  if [ -f "$DIR/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
    echo "slurm: already running ($DIR)"
    return
  fi
  mkdir -p "$DIR"
  write_conf "$nodes"
  write_healthcheck
  start_munge
  # -i: ignore saved state (a fresh cluster every time)
  slurmctld -i
  for i in $(seq 1 "$nodes"); do slurmd -N "node$i"; done
  for _ in $(seq 1 60); do
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l)
    [ "$idle" -ge "$nodes" ] && break
    sleep 1
  done
  if [ "${idle:-0}" -lt "$nodes" ]; then
    echo "slurm: only ${idle:-0} of $nodes nodes became idle; sinfo and the logs:" >&2
    sinfo -N >&2 || true
    tail -n 20 "$DIR"/log/*.log >&2 || true
    exit 1
  fi
  sinfo -N
}

stop() {
  for pid_file in "$DIR"/slurmd-*.pid "$DIR"/slurmctld.pid; do
    [ -f "$pid_file" ] || continue
    kill "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
  done
  if [ -f "$DIR/munged.ours" ] && [ -f /run/munge/munged.pid ]; then
    kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
    rm -f "$DIR/munged.ours"
  fi
}

case "${1:-}" in
  start) start "${2:-3}" ;;
  stop) stop ;;
  *) echo "usage: $0 start [NODES] | stop" >&2; exit 2 ;;
esac
