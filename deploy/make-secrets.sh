#!/bin/sh
# Creates the secret files docker-compose.yml mounts (`make secrets`; docs/operations.md, "Secrets"),
# never overwriting one that exists:
#   generated: the PostgreSQL superuser's and Dagster role's passwords, the MongoDB root password, the
#              store URLs (the application's MongoDB user and password; the dry run's database with
#              the same user) and the lock URL (Redis's password, which the redis service reads
#              from it)
#   empty, for you to fill in: the tracker's key, the provider keys (an empty file: no key), and the
#              proxy's two login lists (`make login`)
# Passwords are 48 hexadecimal digits: nothing to escape in a URL or a config file. Files are
# readable by the containers' own users (each container sees only the files it is given); the
# directory is the operator's alone.
#
#   deploy/make-secrets.sh [DIR]        (default ./secrets)
set -eu
dir="${1:-./secrets}"
umask 077
mkdir -p "$dir"
chmod 700 "$dir"

password() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }

write() {
  # write NAME VALUE: create DIR/NAME holding VALUE unless it exists.
  if [ -e "$dir/$1" ]; then
    echo "kept     $dir/$1"
    return 0
  fi
  printf '%s' "$2" > "$dir/$1"
  chmod 644 "$dir/$1"
  echo "created  $dir/$1"
}

write postgres_superuser_password "$(password)"
write dagster_postgres_password "$(password)"
write mongo_root_password "$(password)"
app_password="$(password)"
if [ -e "$dir/store_url" ]; then
  # The dry run's URL gets the existing application password (one MongoDB user for both).
  app_password="$(sed -n 's|^mongodb://[^:]*:\([^@]*\)@.*|\1|p' "$dir/store_url")"
fi
write store_url "mongodb://social_recording_app:$app_password@mongodb:27017/social_recording?authSource=admin"
write store_url_dryrun "mongodb://social_recording_app:$app_password@mongodb:27017/social_recording_dryrun?authSource=admin"
write lock_url "redis://:$(password)@redis:6379/0"
for name in tracker_api_key twitterapi_io_key apify_token youtube_api_key github_token neynar_api_key urlscan_api_key \
    proxy_operators_htpasswd proxy_viewers_htpasswd; do
  write "$name" ""
done
