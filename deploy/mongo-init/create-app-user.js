// Runs once, when the compose `mongodb` volume is first initialised (the mongo image runs the files
// of /docker-entrypoint-initdb.d as the root user). Creates the application's own user with
// readWrite on the store's databases only (MONGO_APP_DATABASES, set by docker-compose.yml): it can
// read and write documents and create the store's indexes, nothing on other databases, no user or
// server administration. To grant it another database later, run the same createUser/grantRolesToUser
// with mongosh as root.
const user = process.env.MONGO_APP_USER;
const password = process.env.MONGO_APP_PASSWORD;
const databases = (process.env.MONGO_APP_DATABASES || "").split(/\s+/).filter((name) => name.length > 0);
if (!user || !password || databases.length === 0) {
  throw new Error("MONGO_APP_USER, MONGO_APP_PASSWORD and MONGO_APP_DATABASES must be set");
}
const roles = [...new Set(databases)].map((name) => ({ role: "readWrite", db: name }));
db.getSiblingDB("admin").createUser({ user: user, pwd: password, roles: roles });
print(`created MongoDB user ${user} with readWrite on ${roles.map((r) => r.db).join(", ")}`);
