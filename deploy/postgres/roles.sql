-- Two roles for the durable database (docs/operations.md, "Audit trail"): durable_owner owns
-- the schema and runs migrations; durable_app is what web, workers and beat connect as. It
-- owns nothing, so it cannot ALTER a table or disable a trigger, and it is no superuser, so
-- it cannot set session_replication_role. Run once, as a superuser:
--
--   psql -h db.internal -U postgres -v owner_password="'...'" -v app_password="'...'" -f deploy/postgres/roles.sql
--
-- then migrate as the owner and give the app its grants (again after every migrate):
--
--   DATABASE_URL=postgres://durable_owner:...@db.internal/durable manage.py migrate
--   DATABASE_URL=postgres://durable_owner:...@db.internal/durable manage.py durable roles --app-role durable_app --apply
CREATE ROLE durable_owner LOGIN PASSWORD :owner_password;
CREATE ROLE durable_app LOGIN PASSWORD :app_password
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE DATABASE durable OWNER durable_owner;
\connect durable
-- PostgreSQL 15 already refuses CREATE on public to other roles; older versions do not.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
ALTER SCHEMA public OWNER TO durable_owner;
GRANT USAGE ON SCHEMA public TO durable_app;
