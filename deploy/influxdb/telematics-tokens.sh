#!/bin/sh
# docker-compose.yml's influxdb-tokens job: the InfluxDB tokens the stack runs on, each scoped to the one
# bucket, so that only the operator holds the admin token (INFLUX_ADMIN_TOKEN):
#   worker   read and write (workers write the points, and read vehicle history back for late-record
#            corrections and the fuel sync): $TOKENS_DIR/worker/influx.env, INFLUX_TOKEN=<token>, which
#            the workers load with `node --env-file`
#   grafana  read only: $TOKENS_DIR/grafana/token, the bare token, which the data source reads as $__file{...}
# Each file is mode 0400 and owned by its one reader (uid 1000, the image's `node` user; uid 472, Grafana's),
# on a volume of its own that only this job and that reader's containers mount. Receivers get no token.
#
# It runs at every `docker compose up`: a token whose file is there and which InfluxDB still takes is kept;
# one missing, or refused (401: the InfluxDB volume was made anew), is made again. So a stack set up before
# this job existed gets its tokens at its first `up`. To replace a token: `influx auth delete` it, then
# `docker compose up -d --force-recreate influxdb-tokens worker grafana`.
#
# Settings: INFLUX_HOST, INFLUX_TOKEN (the admin token), INFLUX_ORG, INFLUX_BUCKET, INFLUX_USER (who owns
# the tokens), TOKENS_DIR (default /run/telematics).
set -eu

host="${INFLUX_HOST:?set INFLUX_HOST}"
: "${INFLUX_TOKEN:?set INFLUX_TOKEN to the admin token}"
org="${INFLUX_ORG:?set INFLUX_ORG}"
bucket="${INFLUX_BUCKET:?set INFLUX_BUCKET}"
user="${INFLUX_USER:?set INFLUX_USER}"
dir="${TOKENS_DIR:-/run/telematics}"
export INFLUX_HOST INFLUX_TOKEN

say() { echo "influxdb-tokens: $*"; }

tries=0
until influx ping >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then say "InfluxDB at $host does not answer" >&2; exit 1; fi
  sleep 1
done

bucket_id="$(influx bucket list --org "$org" --name "$bucket" --hide-headers | cut -f 1)"
if [ -z "$bucket_id" ]; then say "no bucket $bucket in org $org" >&2; exit 1; fi

# accepted TOKEN: InfluxDB takes it (2xx), or not (401); any other answer stops the job (the next `up` retries).
accepted() {
  code="$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Token $1" "$host/api/v2/buckets?limit=1")" || exit 1
  case "$code" in
    2??) return 0 ;;
    401) return 1 ;;
    *) say "InfluxDB answered $code to a token check" >&2; exit 1 ;;
  esac
}

# token NAME FILE UID FORMAT [influx auth create flags...]; FORMAT: env (INFLUX_TOKEN=<token>) or bare.
token() {
  name="$1" file="$dir/$1/$2" uid="$3" format="$4"
  shift 4
  if [ -s "$file" ]; then
    held="$(sed -n '1{s/^INFLUX_TOKEN=//;p;}' "$file")"
    if accepted "$held"; then say "$name: kept $file"; return 0; fi
    say "$name: InfluxDB refuses the token in $file: making a new one"
  fi
  mkdir -p "$dir/$name"
  made="$(influx auth create --org "$org" --user "$user" --description "telematics-ingest $name ($bucket)" "$@" --json \
    | sed -n 's/^[[:space:]]*"token":[[:space:]]*"\([^"]*\)".*$/\1/p')"
  if [ -z "$made" ]; then say "$name: influx auth create gave no token" >&2; exit 1; fi
  (
    umask 077
    if [ "$format" = env ]; then printf 'INFLUX_TOKEN=%s\n' "$made"; else printf '%s\n' "$made"; fi >"$file.new"
  )
  chown "$uid" "$file.new"
  chmod 0400 "$file.new"
  mv -f "$file.new" "$file"
  say "$name: wrote $file ($*)"
}

token worker influx.env 1000 env --read-bucket "$bucket_id" --write-bucket "$bucket_id"
token grafana token 472 bare --read-bucket "$bucket_id"
