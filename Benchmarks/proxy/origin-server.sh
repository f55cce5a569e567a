# The loopback origin the proxy benchmarks put behind the cache under test: an nginx server block
# serving the files under ROOT, cacheable for an hour except under /miss/ (no-store). Sourced by
# wrk-vs-nginx.sh (into its own nginx.conf) and, through origin_nginx_conf, callgrind-per-request.sh
# and range-deep.sh. Also nginx proxy_cache, the cache we are measured against, configured alike in
# wrk-vs-nginx.sh and callgrind-per-request.sh (nginx_cache_server_block).
origin_server_block() { # port root
    cat <<BLOCK
    server {
        listen 127.0.0.1:$1;
        root $2;
        default_type text/plain;
        location / { add_header Cache-Control "max-age=3600"; etag on; }
        location /miss/ { add_header Cache-Control "no-store"; etag on; }
    }
BLOCK
}

# A whole nginx.conf for the origin alone (one worker, keep-alive without a request limit), its
# pid, log and temp files under WORK. Used by callgrind-per-request.sh and range-deep.sh.
origin_nginx_conf() { # work port root
    cat <<CONF
user root;
worker_processes 1;
pid $1/nginx.pid;
error_log $1/nginx-error.log warn;
events { worker_connections 1024; }
http {
$(nginx_http_basics "$1/tmp")
$(origin_server_block "$2" "$3")
}
CONF
}

# What every nginx http block of the proxy benchmarks holds: no access log, temp files under
# TMP, keep-alive without a request limit.
nginx_http_basics() { # tmp
    cat <<BASICS
    access_log off;
    client_body_temp_path $1/body;
    proxy_temp_path $1/proxy;
    fastcgi_temp_path $1/fastcgi;
    uwsgi_temp_path $1/uwsgi;
    scgi_temp_path $1/scgi;
    keepalive_requests 100000000;
BASICS
}

# The cache zone nginx_cache_server_block uses, in DIR (a line of the http block).
nginx_cache_zone() { # dir
    echo "    proxy_cache_path $1 levels=1:2 keys_zone=bench:10m max_size=1g inactive=60m use_temp_path=off;"
}

# nginx proxy_cache in front of the origin, as a shared cache: RFC headers decide, a status header;
# under /miss/ the same proxying without a cache. Needs nginx_cache_zone in the http block around
# it.
nginx_cache_server_block() { # port origin_port
    cat <<BLOCK
    server {
        listen 127.0.0.1:$1;
        location / {
            proxy_pass http://127.0.0.1:$2;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache bench;
            proxy_cache_revalidate on;
            add_header X-Cache-Status \$upstream_cache_status;
        }
        location /miss/ {
            proxy_pass http://127.0.0.1:$2;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache off;
        }
    }
BLOCK
}
