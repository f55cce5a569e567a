# The loopback origin both proxy benchmarks put behind the cache under test: an nginx server block
# serving the files under ROOT, cacheable for an hour except under /miss/ (no-store). Sourced by
# wrk-vs-nginx.sh and callgrind-per-request.sh, which print it into their nginx.conf.
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
