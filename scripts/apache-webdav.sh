#!/usr/bin/env bash
# Runs Debian's Apache 2.4 with mod_dav/mod_dav_fs on a loopback port as the
# reference WebDAV server for cmd/davbench. Everything lives under DIR (own
# ServerRoot, PidFile, ErrorLog, lock database, DocumentRoot); the system's
# /etc/apache2 configuration and service are not touched.
#
#   scripts/apache-webdav.sh start  [--dir DIR] [--port PORT] [--user U] [--password P] [--hash sha|apr1]
#   scripts/apache-webdav.sh stop   [--dir DIR]
#   scripts/apache-webdav.sh status [--dir DIR]
#
# Defaults: DIR=/tmp/davbench/apache, PORT=8091, user bench / password
# bench-password-1, hash sha. WebDAV is served at http://127.0.0.1:PORT/dav/
# from DIR/htdocs/dav (populate it before `start`: start hands the tree to
# www-data, which the workers run as).
#
# Password hash: {SHA} by default (htpasswd -s). Apache verifies Basic
# credentials on every request and does not cache the result; a {SHA} entry
# costs microseconds, Debian's default apr1 (1,000 rounds of MD5) costs
# enough to lower Apache's small-file rate by about 25% (see
# ../shared/notes/webdav-baseline.md). Ontoflow caches its argon2id
# verifications, so {SHA} is the fair, i.e. the harder, comparison.
set -euo pipefail

cmd=${1:-}
[ -n "$cmd" ] && shift
dir=/tmp/davbench/apache port=8091 user=bench password=bench-password-1 hash=sha
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift ;;
    --port) port=$2; shift ;;
    --user) user=$2; shift ;;
    --password) password=$2; shift ;;
    --hash) hash=$2; shift ;;
    *) echo "apache-webdav.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
modules=/usr/lib/apache2/modules

install_apache() {
  if [ -x /usr/sbin/apache2 ] && [ -x /usr/bin/htpasswd ] && [ -f "$modules/mod_dav_fs.so" ]; then
    return
  fi
  # The package's postinst would start the stock site on port 80; policy-rc.d
  # refusing (101) keeps it stopped, we only want the binaries and modules.
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y apache2 apache2-utils ||
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y apache2 apache2-utils; }
  [ "$created" = 1 ] && rm -f "$policy"
  return 0
}

write_config() {
  mkdir -p "$dir/htdocs/dav" "$dir/var" "$dir/logs"
  case "$hash" in
    sha) htpasswd -b -c -s "$dir/htpasswd" "$user" "$password" 2>/dev/null ;;
    apr1) htpasswd -b -c -m "$dir/htpasswd" "$user" "$password" 2>/dev/null ;;
    *) echo "apache-webdav.sh: --hash must be sha or apr1" >&2; exit 2 ;;
  esac
  # mpm_event with Debian's stock mpm_event.conf values; KeepAlive values
  # are Debian's apache2.conf defaults. EnableSendfile stays at Apache's
  # default (Off), as Debian ships it.
  cat >"$dir/httpd.conf" <<EOF
ServerRoot "$dir"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile "$dir/var/httpd.pid"
Mutex file:$dir/var default
DefaultRuntimeDir "$dir/var"
ErrorLog "$dir/logs/error.log"
LogLevel warn
User www-data
Group www-data

LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authn_core_module $modules/mod_authn_core.so
LoadModule authn_file_module $modules/mod_authn_file.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule authz_user_module $modules/mod_authz_user.so
LoadModule auth_basic_module $modules/mod_auth_basic.so
LoadModule mime_module $modules/mod_mime.so
LoadModule dav_module $modules/mod_dav.so
LoadModule dav_fs_module $modules/mod_dav_fs.so

StartServers 2
MinSpareThreads 25
MaxSpareThreads 75
ThreadLimit 64
ThreadsPerChild 25
MaxRequestWorkers 150
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
Timeout 300

TypesConfig /etc/mime.types
LogFormat "%h %l %u %t \"%r\" %>s %O %D" bench
CustomLog "$dir/logs/access.log" bench

DavLockDB "$dir/var/DavLock"
DocumentRoot "$dir/htdocs"
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory "$dir/htdocs">
    Require all granted
</Directory>
<Location "/dav/">
    Dav On
    AuthType Basic
    AuthName "davbench"
    AuthBasicProvider file
    AuthUserFile "$dir/htpasswd"
    Require valid-user
</Location>
EOF
}

pid_of() {
  local f="$dir/var/httpd.pid"
  [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

case "$cmd" in
  start)
    install_apache
    if pid=$(pid_of); then
      echo "apache already running, pid $pid" >&2
      exit 1
    fi
    write_config
    # Workers run as www-data: they need the tree, the lock database and
    # the logs; every directory above DIR must be traversable.
    chown -R www-data:www-data "$dir/htdocs" "$dir/var"
    chmod 0644 "$dir/htpasswd"
    /usr/sbin/apache2 -f "$dir/httpd.conf" -k start
    for _ in $(seq 100); do
      if pid=$(pid_of); then
        echo "apache pid $pid on http://127.0.0.1:$port/dav/ (user $user, $hash hash)"
        exit 0
      fi
      sleep 0.1
    done
    echo "apache did not start; see $dir/logs/error.log:" >&2
    tail -20 "$dir/logs/error.log" >&2 || true
    exit 1
    ;;
  stop)
    if pid=$(pid_of); then
      /usr/sbin/apache2 -f "$dir/httpd.conf" -k stop
      for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || exit 0
        sleep 0.1
      done
      echo "apache pid $pid did not stop" >&2
      exit 1
    fi
    ;;
  status)
    if pid=$(pid_of); then echo "running, pid $pid"; else echo "stopped"; exit 3; fi
    ;;
  *)
    echo "usage: $0 start|stop|status [--dir DIR] [--port PORT] [--user U] [--password P] [--hash sha|apr1]" >&2
    exit 2
    ;;
esac
