use super::super::ServerRules;
use super::super::testing::{TestSite, assert_hides, assert_hides_nothing};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn hidden(conf: &str) -> ServerRules {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("site.conf");
    std::fs::write(&file, conf).unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let mut rules = t.rules();
    rules.add_server_config(&file, t.site()).unwrap();
    rules
}

#[test]
fn only_what_could_let_the_judge_in_is_hidden() {
    let r = hidden(
        r#"server {
            listen 80; root /var/www; server_name www.example.org;
            location / { try_files $uri $uri/ =404; }
            location /private/ { auth_basic "staff"; auth_basic_user_file /etc/htpasswd; }
            location = /admin.html { allow 10.0.0.0/8; deny all; }
            location = /status.html { allow 127.0.0.1; deny all; }
            location /intranet/ { allow 192.0.2.0/24; deny all; }
            location ^~ /internal/ { internal; }
            location ~* \.(sql|bak)$ { return 404; }
            location /open/ { auth_basic off; }
            location /office/ { if ($remote_addr !~ ^10\.) { return 403; } }
            location /moved/ { return 302 /elsewhere/; }
            location /app/ { proxy_pass http://127.0.0.1:9000; proxy_set_header X-Real-IP $remote_addr; }
            location ~ \.html$ { fastcgi_pass 127.0.0.1:9001; include /dev/null; }
            location /nested/ { location /nested/secret/ { satisfy any; allow ::1; auth_basic x; } }
            location /js/ { js_content app.handler; }
            location /methods/ { limit_except GET { deny all; } }
            location /posts/ { limit_except POST { allow 127.0.0.1; deny all; } }
            location /sso/ { auth_request /auth; }
            location /unix/ { allow unix:; deny all; }
        }"#,
    );
    assert_hides(
        &r,
        &[
            "status.html",
            "intranet/a.html",
            "office/a.html",
            "nested/secret/a.html",
            "js/x.css",
            "sso/a.css",
            "unix/a.css",
            "posts/a.html",
        ],
        &[
            "index.html",
            "private/notes.html",
            "admin.html",
            "internal/x.css",
            "dump.SQL",
            "open/a.html",
            "moved/a.css",
            "app/a.css",
            "nested/a.css",
            "methods/a.css",
        ],
    );
    let why = r.hides("js/x.css").unwrap().to_string();
    assert!(
        why.contains("js_content is not understood") && why.contains("--trust-directive"),
        "{why}"
    );
    let status = r.hides("status.html").unwrap().to_string();
    assert!(
        status.contains("site.conf:6") && status.contains("loopback"),
        "{status}"
    );
    // What depends on who asks but refuses the judge as a stranger is noted for `check`.
    assert!(r.noted("admin.html").is_some());
    assert!(r.noted("private/notes.html").is_some());
    assert!(r.noted("index.html").is_none());
}

#[test]
fn variables_that_depend_on_who_asks_hide_any_directive_they_steer() {
    let r = hidden(
        r#"map $http_user_agent $bot { default 0; ~bot 1; }
        map $uri $section { default main; ~^/docs docs; }
        map $remote_addr $tree { default /var/www; 127.0.0.1 /var/private; }
        geo $office { default 0; 10.0.0.0/8 1; }
        geo $backend { default 127.0.0.1:9000; 127.0.0.0/8 127.0.0.1:9001; }
        server {
            set $copy $office;
            location /a/ { if ($bot) { return 403; } }
            location /b/ { if ($section = docs) { return 404; } }
            location /c/ { if ($copy) { return 403; } }
            location /d/ { if (-f $request_filename) { break; } }
            location ~ ^/e/(?<page>.+)$ { if ($page = x) { return 404; } }
            location /f/ { if ($arg_debug) { return 200 "debug"; } }
            location /g/ { if ($http_host != "www.example.org") { return 444; } }
            location /h/ { root $tree; }
            location /i/ { proxy_pass http://$backend; }
            location /j/ { alias $tree/j/; }
            location /k/ { add_header X-Office $office; access_log /var/log/x.log; }
        }"#,
    );
    assert_hides(
        &r,
        &["a/x", "c/x", "h/x", "i/x", "j/x"],
        &["b/x", "d/x", "e/x", "f/x", "g/x", "k/x"],
    );
    assert!(r.hides("h/x").unwrap().to_string().contains("root $tree"));
}

#[test]
fn includes_are_followed_and_an_unreadable_one_hides_what_it_governs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("nginx.conf"),
        "events {} http { include sites/*.conf; }",
    )
    .unwrap();
    std::fs::create_dir(tmp.path().join("snippets")).unwrap();
    std::fs::write(
        tmp.path().join("snippets/deny.conf"),
        "allow 127.0.0.1; deny all;",
    )
    .unwrap();
    std::fs::create_dir(tmp.path().join("sites")).unwrap();
    let file = tmp.path().join("sites/site.conf");
    std::fs::write(
        &file,
        "server { location /admin/ { include snippets/deny.conf; }
                  location /lost/ { include snippets/missing.conf; }
                  location /glob/ { include snippets/none-*.conf; } }",
    )
    .unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let mut rules = t.rules();
    let survey = rules.add_server_config(&file, t.site()).unwrap();
    assert_eq!(survey.main_found, Some(tmp.path().join("nginx.conf")));
    let admin = rules.hides("admin/x.html").unwrap().to_string();
    assert!(
        admin.contains("deny.conf:1") && admin.contains("allow"),
        "{admin}"
    );
    let lost = rules.hides("lost/x.html").unwrap().to_string();
    assert!(lost.contains("missing.conf"), "{lost}");
    assert!(rules.hides("glob/x.html").is_none());
    assert!(rules.hides("index.html").is_none());
    assert!(
        rules
            .sources()
            .contains(&tmp.path().join("snippets/deny.conf"))
    );
    assert!(rules.watched_dirs().contains(&tmp.path().join("sites")));
}

#[test]
fn the_rules_of_the_main_file_are_read_when_only_a_site_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sites-enabled")).unwrap();
    std::fs::write(
        tmp.path().join("nginx.conf"),
        "events {} http { allow 127.0.0.1; deny all; include sites-enabled/*; }",
    )
    .unwrap();
    let site = tmp.path().join("sites-enabled/site");
    std::fs::write(
        &site,
        "server { listen 80; location / { try_files $uri =404; } }",
    )
    .unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let mut rules = t.rules();
    rules.add_server_config(&site, t.site()).unwrap();
    assert!(rules.hides("index.html").is_some(), "the http-wide allow");
}

#[test]
fn only_the_server_blocks_of_the_site_are_read() {
    let r = hidden(
        "server { server_name admin.example.org; allow 127.0.0.1; deny all; }
         server { server_name www.example.org; location / { try_files $uri =404; } }",
    );
    assert!(r.hides("index.html").is_none());
    // None serving the site by name: all of them count.
    let r = hidden("server { server_name admin.example.org; allow 127.0.0.0/8; deny all; }");
    assert!(r.hides("index.html").is_some());
    // The blocks the agent knows answer the site, and no other.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("site.conf");
    std::fs::write(
        &file,
        "server { listen 127.0.0.1:80; server_name www.example.org; allow 127.0.0.1; deny all; }\n\
         server { listen 80; server_name www.example.org; }\n",
    )
    .unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let chosen = [(file.display().to_string(), 2)];
    let mut site = t.site();
    site.vhosts = Some(&chosen);
    let mut rules = t.rules();
    rules.add_server_config(&file, site).unwrap();
    assert_hides_nothing(&rules);
}

#[test]
fn debians_default_site_and_the_shipped_block_hide_nothing() {
    // Its mime.types include, wherever nginx is installed or not.
    let tmp = tempfile::tempdir().unwrap();
    let types = tmp.path().join("mime.types");
    std::fs::write(&types, "types { text/html html; }").unwrap();
    let shipped = include_str!("../../../../examples/nginx/site.conf")
        .replace("/etc/nginx/mime.types", &types.display().to_string());
    let r = hidden(&shipped);
    assert_hides_nothing(&r);
    let debian = "server {
 listen 80 default_server;
 listen [::]:80 default_server;
 root /var/www/html;
 index index.html index.htm index.nginx-debian.html;
 server_name _;
 location / {
 try_files $uri $uri/ =404;
 }
}
";
    assert_hides_nothing(&hidden(debian));
}

#[test]
fn a_dump_is_spliced_from_what_nginx_printed() {
    let dumped: BTreeMap<PathBuf, String> = [
        (
            "/etc/nginx/nginx.conf",
            "events {} http { include /etc/nginx/conf.d/*.conf; include /etc/nginx/sites-enabled/*; }",
        ),
        ("/etc/nginx/conf.d/a.conf", "allow 127.0.0.1;"),
        ("/etc/nginx/sites-enabled/site", "server { listen 80; }"),
    ]
    .into_iter()
    .map(|(p, t)| (PathBuf::from(p), t.to_string()))
    .collect();
    let tmp = tempfile::tempdir().unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let mut rules = t.rules();
    let survey = rules
        .add_nginx_dump(
            std::path::Path::new("/etc/nginx/nginx.conf"),
            &dumped,
            t.site(),
        )
        .unwrap();
    assert_eq!(survey.vhosts.len(), 1);
    assert_eq!(survey.vhosts[0].listens, ["80"]);
    let why = rules.hides("index.html").unwrap().to_string();
    assert!(why.contains("/etc/nginx/conf.d/a.conf:1"), "{why}");
}

#[test]
fn an_address_rule_does_not_reach_a_location_that_sets_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sites")).unwrap();
    std::fs::write(
        tmp.path().join("nginx.conf"),
        "events {} http { allow 127.0.0.1; allow 10.0.0.0/8; deny all; include sites/*; }",
    )
    .unwrap();
    let site = tmp.path().join("sites/site");
    std::fs::write(
        &site,
        "server {
            location = /index.html { allow all; }
            location ^~ /public/ { allow all; }
            location /public/drafts/ { }
            location /open/ { allow all; }
            location ~ \\.html$ { }
        }",
    )
    .unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let mut rules = t.rules();
    rules.add_server_config(&site, t.site()).unwrap();
    // Exact and ^~ locations are sure to be chosen: the http-wide grant does not reach them.
    // A plain prefix may lose to a regex location that inherits it: still hidden.
    assert_hides(
        &rules,
        &[
            "intranet/plan.html",
            "public/drafts/a.html",
            "open/a.html",
            "x.css",
        ],
        &["index.html", "public/page.html", "public/a/b.css"],
    );
    // A server block that sets its own rules inherits none of http's.
    let r = hidden("allow 127.0.0.1; deny all; server { allow all; }");
    assert_hides_nothing(&r);
}

#[test]
fn a_request_moved_inside_the_server_is_judged_where_it_ends() {
    let r = hidden(
        r#"server {
            listen 80; root /var/www; server_name www.example.org;
            location / { try_files $uri $uri/ /index.php?$args; }
            location /members/ { deny all; error_page 403 = @open; }
            location @open { allow 127.0.0.0/8; deny all; }
            location /files/ { try_files $uri @back; }
            location @back { allow 127.0.0.0/8; deny all; }
            location /docs/ { deny all; error_page 403 = /internal$uri; }
            location /internal/ { internal; alias /var/www/; allow 127.0.0.0/8; deny all; }
            location /r/ { rewrite ^/r/(.*)$ /inner/$1 last; }
            location /inner/ { internal; allow 127.0.0.1; deny all; }
            location /chain/ { rewrite ^ /r/x last; }
            location /plain/ { deny all; error_page 403 = @quiet; }
            location @quiet { return 404; }
            location /away/ { error_page 404 https://elsewhere.example/; rewrite ^ /inner/x redirect; }
        }"#,
    );
    assert_hides(
        &r,
        &[
            "members/a.html",
            "files/a.html",
            "docs/a.html",
            "internal/a.html",
            "r/a.html",
            "inner/a.html",
            "chain/a.html",
        ],
        // The twin: moves that end where nothing lets the judge in, or that leave the server
        // (a redirect the client follows, asking again as itself), hide nothing.
        &["index.html", "a/b.html", "plain/a.html", "away/a.html"],
    );
    let why = r.hides("members/a.html").unwrap().to_string();
    assert!(
        why.contains("error_page 403 = @open") && why.contains("ends in location @open"),
        "{why}"
    );
    let why = r.hides("docs/a.html").unwrap().to_string();
    assert!(why.contains("the request ends where"), "{why}");
}
