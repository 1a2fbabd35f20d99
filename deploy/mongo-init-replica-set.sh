#!/usr/bin/env bash
# Initiates the one-node replica set rs0 once mongod answers; safe to run again (already initialised is OK).
set -euo pipefail
until mongosh --quiet --host mongo --eval 'db.adminCommand("ping").ok' | grep -q 1; do sleep 1; done
mongosh --quiet --host mongo --eval '
try { rs.status().ok } catch (e) {
  rs.initiate({_id: "rs0", members: [{_id: 0, host: "mongo:27017"}]})
}'
