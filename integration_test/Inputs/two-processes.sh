#!/usr/bin/env bash
# Starts COMMAND twice as ranks 0 and 1 of a 2-process job, with the
# variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
# MASTER_PORT), but without torchrun's supervision: torchrun kills the other
# workers as soon as one fails, which would hide how a rank notices a dead
# peer by itself. Prints both ranks' output; exits with rank 0's status.
#
#   two-processes.sh COMMAND [ARGS...]
port=$((20000 + RANDOM % 20000))
out=$(mktemp -d)
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" > "$out/$rank" 2>&1 &
  pids[$rank]=$!
done
wait "${pids[0]}"; status=$?
wait "${pids[1]}"
cat "$out/1" "$out/0"
rm -rf "$out"
exit $status
