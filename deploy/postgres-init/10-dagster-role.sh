#!/bin/sh
# Runs once, when the compose `postgres` volume is first initialised: the postgres image runs the
# files of /docker-entrypoint-initdb.d as its superuser (POSTGRES_USER, an operators' role). Creates
# Dagster's own role, which owns its database and nothing else: no superuser, no CREATEDB, no
# CREATEROLE, no replication; other roles lose their default CONNECT on that database. Its password
# is the dagster_postgres_password secret's, passed to psql through the environment (never on a
# command line). The deployment rehearsal creates its database with this very script.
set -eu
: "${POSTGRES_USER:?}" "${POSTGRES_DB:?}"
: "${DAGSTER_POSTGRES_USER:?set DAGSTER_POSTGRES_USER}" "${DAGSTER_POSTGRES_DB:?set DAGSTER_POSTGRES_DB}"
: "${DAGSTER_POSTGRES_PASSWORD_FILE:?set DAGSTER_POSTGRES_PASSWORD_FILE}"
if [ ! -r "$DAGSTER_POSTGRES_PASSWORD_FILE" ]; then
  echo "10-dagster-role.sh: DAGSTER_POSTGRES_PASSWORD_FILE: cannot read $DAGSTER_POSTGRES_PASSWORD_FILE" >&2
  exit 64
fi
DAGSTER_ROLE_PASSWORD="$(cat "$DAGSTER_POSTGRES_PASSWORD_FILE")" \
psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
\getenv role DAGSTER_POSTGRES_USER
\getenv db DAGSTER_POSTGRES_DB
\getenv password DAGSTER_ROLE_PASSWORD
CREATE ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"role";
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
\connect :"db"
ALTER SCHEMA public OWNER TO :"role";
SQL
echo "10-dagster-role.sh: created role $DAGSTER_POSTGRES_USER owning database $DAGSTER_POSTGRES_DB"
