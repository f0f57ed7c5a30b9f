//! What each web server directive means to the judge, which asks as a stranger would: from
//! an address no configuration names, without credentials, cookies or a referrer. A directive
//! is seen (its effect is the same for everyone, so the judge's answer shows it), refuses
//! (it depends on who asks, but can only refuse someone without credentials, as it refuses
//! the judge), grants by address (the reader looks at which addresses), depends on who asks in
//! a way the judge cannot present (hidden), or is unknown to the agent (hidden too, unless the
//! operator vouches for it with `--trust-directive`).

/// How a directive bears on what the judge sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Its effect is the same for every client: the judge's answer shows it.
    Seen,
    /// Its effect depends on who asks, but it can only refuse a stranger (no credentials, no
    /// certificate, an address it does not name): the judge is answered as one.
    Refuses,
    /// It grants by the client's address: the reader looks at which addresses.
    Grants,
    /// Its effect depends on who asks in a way the judge cannot present (a backend's decision,
    /// code): the places it governs are hidden.
    WhoAsks,
    /// Not known to the agent.
    Unknown,
}

/// nginx directives that refuse whoever lacks credentials (or is named by a `deny`): the
/// judge, a stranger, is refused by them as anyone is.
#[rustfmt::skip]
const NGINX_REFUSES: &[&str] = &[
    "deny", "satisfy", "auth_basic", "auth_basic_user_file", "auth_jwt", "auth_jwt_key_file",
    "auth_jwt_key_request", "auth_jwt_claim_set", "auth_jwt_header_set", "auth_jwt_require",
    "auth_jwt_type", "auth_jwt_leeway", "auth_delay", "secure_link", "secure_link_md5",
    "secure_link_secret", "valid_referers", "ssl_verify_client", "ssl_client_certificate",
    "ssl_trusted_certificate", "ssl_crl", "ssl_verify_depth",
];

/// nginx directives whose decision is made by something the reader cannot see (a backend's
/// answer, code): it might let the judge in.
#[rustfmt::skip]
const NGINX_WHO_ASKS: &[&str] = &[
    "auth_request", "auth_request_set", "auth_http", "access_by_lua", "access_by_lua_block",
    "access_by_lua_file",
];

/// nginx directives whose effect is the same for every client (or only concerns the
/// connection, logs, limits and caches): the judge sees what they do.
#[rustfmt::skip]
const NGINX_SEEN: &[&str] = &[
    // core, http, server and location
    "root", "alias", "index", "try_files", "return", "rewrite", "rewrite_log", "error_page",
    "internal", "listen", "server_name", "default_type", "types_hash_max_size",
    "types_hash_bucket_size", "server_names_hash_max_size", "server_names_hash_bucket_size",
    "variables_hash_max_size", "variables_hash_bucket_size", "charset", "source_charset",
    "override_charset", "charset_types", "sendfile", "sendfile_max_chunk", "tcp_nopush",
    "tcp_nodelay", "keepalive_timeout", "keepalive_requests", "keepalive_time",
    "keepalive_disable", "client_max_body_size", "client_body_buffer_size", "client_body_timeout",
    "client_header_timeout", "client_header_buffer_size", "client_body_temp_path",
    "client_body_in_file_only", "client_body_in_single_buffer", "large_client_header_buffers",
    "send_timeout", "reset_timedout_connection", "lingering_close", "lingering_time",
    "lingering_timeout", "output_buffers", "postpone_output", "aio", "aio_write", "directio",
    "directio_alignment", "read_ahead", "open_file_cache", "open_file_cache_errors",
    "open_file_cache_min_uses", "open_file_cache_valid", "disable_symlinks", "log_not_found",
    "log_subrequest", "access_log", "error_log", "log_format", "open_log_file_cache",
    "server_tokens", "underscores_in_headers", "ignore_invalid_headers", "merge_slashes",
    "msie_padding", "msie_refresh", "absolute_redirect", "port_in_redirect",
    "server_name_in_redirect", "recursive_error_pages", "chunked_transfer_encoding", "etag",
    "if_modified_since", "max_ranges", "limit_rate", "limit_rate_after", "resolver",
    "resolver_timeout", "subrequest_output_buffer_size", "http2", "http2_max_concurrent_streams",
    "http2_chunk_size", "http2_body_preread_size", "http2_idle_timeout", "http3", "quic_retry",
    "connection_pool_size", "request_pool_size", "send_lowat",
    "lingering_close_timeout", "expires", "add_header", "add_trailer", "more_set_headers",
    "more_clear_headers", "more_set_input_headers", "more_clear_input_headers", "autoindex",
    "autoindex_exact_size", "autoindex_format", "autoindex_localtime", "random_index", "ssi",
    "ssi_types", "ssi_silent_errors", "ssi_value_length", "ssi_min_file_chunk",
    "ssi_last_modified", "sub_filter", "sub_filter_once", "sub_filter_types",
    "sub_filter_last_modified", "addition_types", "add_before_body", "add_after_body",
    "image_filter", "image_filter_buffer", "image_filter_jpeg_quality", "image_filter_sharpen",
    "image_filter_transparency", "image_filter_interlace", "xslt_stylesheet", "xslt_types", "mp4",
    "mp4_buffer_size", "mp4_max_buffer_size", "flv", "slice", "empty_gif", "stub_status", "gunzip",
    "gunzip_buffers", "gzip", "gzip_static", "gzip_types", "gzip_vary", "gzip_comp_level",
    "gzip_min_length", "gzip_proxied", "gzip_disable", "gzip_http_version", "gzip_buffers",
    "brotli", "brotli_static", "brotli_types", "brotli_comp_level", "brotli_min_length",
    "brotli_window", "brotli_buffers", "zstd", "zstd_static", "zstd_types", "zstd_comp_level",
    "zstd_min_length", "limit_req", "limit_req_status", "limit_req_log_level", "limit_req_dry_run",
    "limit_req_zone", "limit_conn", "limit_conn_status", "limit_conn_log_level",
    "limit_conn_dry_run", "limit_conn_zone", "real_ip_header", "set_real_ip_from",
    "real_ip_recursive", "mirror", "mirror_request_body", "ssl_certificate", "ssl_certificate_key",
    "ssl_protocols", "ssl_ciphers", "ssl_prefer_server_ciphers", "ssl_session_cache",
    "ssl_session_timeout", "ssl_session_tickets", "ssl_session_ticket_key", "ssl_dhparam",
    "ssl_ecdh_curve", "ssl_stapling", "ssl_stapling_verify", "ssl_stapling_file",
    "ssl_stapling_responder", "ssl_buffer_size", "ssl_early_data", "ssl_conf_command",
    "ssl_password_file", "ssl_reject_handshake", "ssl_ocsp", "ssl_ocsp_cache",
    "ssl_ocsp_responder", "ssl", "types", "include", "set", "break", "uninitialized_variable_warn",
    "userid", "userid_domain", "userid_expires", "userid_name", "userid_path", "userid_p3p",
    "userid_flags", "userid_service", "userid_mark", "default_server", "keepalive",
    "fastcgi_split_path_info",
    // proxies and application gateways: what the judge gets is what they answer
    "proxy_pass", "proxy_set_header", "proxy_http_version", "proxy_redirect", "proxy_buffering",
    "proxy_buffers", "proxy_buffer_size", "proxy_busy_buffers_size", "proxy_read_timeout",
    "proxy_send_timeout", "proxy_connect_timeout", "proxy_hide_header", "proxy_pass_header",
    "proxy_ignore_headers", "proxy_intercept_errors", "proxy_next_upstream",
    "proxy_next_upstream_tries", "proxy_next_upstream_timeout", "proxy_cache", "proxy_cache_key",
    "proxy_cache_valid", "proxy_cache_bypass", "proxy_no_cache", "proxy_cache_path",
    "proxy_cache_use_stale", "proxy_cache_lock", "proxy_cache_methods", "proxy_cache_min_uses",
    "proxy_cache_revalidate", "proxy_cache_background_update", "proxy_temp_path",
    "proxy_max_temp_file_size", "proxy_request_buffering", "proxy_ssl_server_name",
    "proxy_ssl_name", "proxy_ssl_verify", "proxy_ssl_trusted_certificate", "proxy_ssl_protocols",
    "proxy_ssl_session_reuse", "proxy_pass_request_body", "proxy_pass_request_headers",
    "proxy_method", "proxy_set_body", "proxy_cookie_domain", "proxy_cookie_path",
    "proxy_cookie_flags", "proxy_headers_hash_max_size", "proxy_headers_hash_bucket_size",
    "proxy_socket_keepalive", "proxy_bind", "proxy_store", "proxy_store_access", "fastcgi_pass",
    "fastcgi_param", "fastcgi_index", "fastcgi_intercept_errors", "fastcgi_buffers",
    "fastcgi_buffer_size", "fastcgi_busy_buffers_size", "fastcgi_read_timeout",
    "fastcgi_send_timeout", "fastcgi_connect_timeout", "fastcgi_hide_header",
    "fastcgi_pass_header", "fastcgi_ignore_headers", "fastcgi_cache", "fastcgi_cache_key",
    "fastcgi_cache_valid", "fastcgi_cache_path", "fastcgi_cache_bypass", "fastcgi_no_cache",
    "fastcgi_keep_conn", "fastcgi_temp_path", "fastcgi_buffering", "fastcgi_request_buffering",
    "fastcgi_max_temp_file_size", "fastcgi_next_upstream", "fastcgi_catch_stderr", "uwsgi_pass",
    "uwsgi_param", "uwsgi_read_timeout", "uwsgi_send_timeout", "uwsgi_buffers",
    "uwsgi_buffer_size", "uwsgi_temp_path", "scgi_pass", "scgi_param", "scgi_temp_path",
    "grpc_pass", "grpc_set_header", "grpc_read_timeout", "memcached_pass",
    // the main and events contexts, and http-wide settings
    "user", "worker_processes", "worker_connections", "worker_rlimit_nofile",
    "worker_cpu_affinity", "worker_priority", "worker_shutdown_timeout", "pid", "daemon",
    "master_process", "load_module", "pcre_jit", "thread_pool", "timer_resolution", "env",
    "lock_file", "multi_accept", "accept_mutex", "accept_mutex_delay", "use", "ssl_engine",
    "working_directory", "debug_connection", "worker_aio_requests",
];

/// Blocks whose content is not directives of the request's processing (types, variable maps,
/// upstream servers, other protocols): their words are not analysed as directives.
#[rustfmt::skip]
pub(crate) const NGINX_OPAQUE_BLOCKS: &[&str] = &[
    "types", "map", "geo", "upstream", "split_clients", "events", "stream", "mail", "match",
    "charset_map", "geoip2",
];

/// What an nginx directive means to the judge.
pub(crate) fn nginx(name: &str, trusted: &[String]) -> Kind {
    let n = name.to_ascii_lowercase();
    if n == "allow" {
        Kind::Grants
    } else if NGINX_REFUSES.contains(&n.as_str()) {
        Kind::Refuses
    } else if NGINX_WHO_ASKS.contains(&n.as_str()) {
        Kind::WhoAsks
    } else if NGINX_SEEN.contains(&n.as_str()) || trusted.contains(&n) {
        Kind::Seen
    } else {
        Kind::Unknown
    }
}

/// nginx directives whose arguments may read what a client sent without deciding what is
/// served (logs, headers added to the answer or passed to a backend, rate limits, cache keys).
/// A variable that depends on who asks, read anywhere else (`root`, `alias`, `proxy_pass`,
/// `return`, `rewrite`, `try_files`, `if`...), hides what the directive governs.
#[rustfmt::skip]
const NGINX_CLIENT_VALUES_ALLOWED: &[&str] = &[
    "access_log", "log_format", "error_log", "add_header", "add_trailer", "more_set_headers",
    "more_clear_headers", "proxy_set_header", "fastcgi_param", "uwsgi_param", "scgi_param",
    "grpc_set_header", "limit_req_zone", "limit_conn_zone", "proxy_cache_key",
    "fastcgi_cache_key", "uwsgi_cache_key", "scgi_cache_key", "proxy_cache_bypass",
    "proxy_no_cache", "fastcgi_cache_bypass", "fastcgi_no_cache", "limit_rate", "set",
    "userid_domain", "userid_path", "expires", "auth_basic", "real_ip_header",
];

/// Whether an nginx directive may read a value that depends on who asks without that value
/// deciding what is served.
pub(crate) fn nginx_client_values_allowed(name: &str) -> bool {
    NGINX_CLIENT_VALUES_ALLOWED.contains(&name.to_ascii_lowercase().as_str())
}

/// nginx variables that are the same for every client asking for a given URL of the site
/// (the judge sends the site's own `Host`): an `if` on any other depends on who asks.
#[rustfmt::skip]
const NGINX_SAME_FOR_ALL: &[&str] = &[
    "uri", "document_uri", "request_uri", "request_filename", "document_root", "realpath_root",
    "host", "http_host", "server_name", "server_addr", "server_port", "scheme", "https",
    "request_method", "fastcgi_script_name", "fastcgi_path_info", "hostname", "nginx_version",
    "pid", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    // The query belongs to the URL, and a listed URL has none: the judge asks it as anyone
    // asking the listed URL does.
    "args", "query_string", "is_args",
];

/// Whether an nginx variable (without `$`) is the same for every client asking for a listed
/// URL.
pub(crate) fn nginx_variable_same_for_all(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    NGINX_SAME_FOR_ALL.contains(&n.as_str()) || n.starts_with("arg_")
}

/// Apache directives that refuse whoever lacks credentials or is named (`Deny`, `Order` and
/// `Satisfy` only combine grants; authentication asks for what the judge has not): the judge,
/// a stranger, is refused as anyone is.
#[rustfmt::skip]
const APACHE_REFUSES: &[&str] = &[
    "deny", "order", "satisfy", "sslverifyclient", "sslrequiressl", "sslcacertificatefile",
    "sslcacertificatepath", "sslverifydepth",
];

/// Apache directives that set a variable by who asks: harmless unless a rule reads the
/// variable (`Require env`, `Allow from env=`, `%{ENV:...}`), which the reader hides itself.
#[rustfmt::skip]
const APACHE_SETS_VARIABLES: &[&str] = &[
    "setenvif", "setenvifnocase", "setenvifexpr", "browsermatch", "browsermatchnocase",
];

/// Apache directives whose effect is the same for every client: the judge sees it.
#[rustfmt::skip]
const APACHE_SEEN: &[&str] = &[
    "addtype", "addhandler", "sethandler", "removehandler", "removetype", "addencoding",
    "removeencoding", "addcharset", "addlanguage", "adddefaultcharset", "defaulttype", "forcetype",
    "addoutputfilter", "addoutputfilterbytype", "addinputfilter", "setoutputfilter",
    "setinputfilter", "removeoutputfilter", "removeinputfilter", "rewriteengine", "rewriterule",
    "rewritebase", "rewriteoptions", "rewritemap", "redirect", "redirectmatch",
    "redirectpermanent", "redirecttemp", "alias", "aliasmatch", "scriptalias", "scriptaliasmatch",
    "errordocument", "options", "directoryindex", "directoryslash", "directorycheckhandler",
    "fallbackresource", "header", "requestheader", "expiresactive", "expiresbytype",
    "expiresdefault", "fileetag", "contentdigest", "php_value", "php_flag", "php_admin_value",
    "php_admin_flag", "acceptpathinfo", "allowoverride", "allowoverridelist", "servername",
    "serveralias", "serveradmin", "serverpath", "documentroot", "errorlog", "customlog",
    "loglevel", "logformat", "transferlog", "proxypass", "proxypassreverse",
    "proxypassreversecookiedomain", "proxypassreversecookiepath", "proxypassmatch",
    "proxypreservehost", "proxyrequests", "proxytimeout", "proxyaddheaders", "proxyerroroverride",
    "proxyset", "proxyvia", "protocols", "keepalive", "keepalivetimeout", "maxkeepaliverequests",
    "timeout", "hostnamelookups", "usecanonicalname", "usecanonicalphysicalport", "enablesendfile",
    "enablemmap", "limitrequestbody", "limitrequestfields", "limitrequestfieldsize",
    "limitrequestline", "limitxmlrequestbody", "include", "includeoptional", "indexoptions",
    "indexignore", "indexorderdefault", "indexstylesheet", "headername", "readmename", "addicon",
    "addiconbytype", "addiconbyencoding", "addalt", "addaltbytype", "addaltbyencoding",
    "adddescription", "defaulticon", "action", "script", "cgipassauth", "cgivar",
    "languagepriority", "forcelanguagepriority", "multiviewsmatch", "checkspelling",
    "checkcaseonly", "deflatecompressionlevel", "deflatebuffersize", "deflatememlevel",
    "deflatewindowsize", "define", "undefine", "listen", "loadmodule", "loadfile", "user", "group",
    "serverroot", "pidfile", "mutex", "defaultruntimedir", "accessfilename", "serversignature",
    "servertokens", "traceenable", "filterprovider", "filterchain", "filterdeclare", "filtertrace",
    "setenv", "unsetenv", "passenv", "mergetrailers", "mergeslashes", "http2", "h2direct",
    "h2push", "sslengine", "sslcertificatefile", "sslcertificatekeyfile",
    "sslcertificatechainfile", "sslprotocol", "sslciphersuite", "sslhonorcipherorder",
    "sslcompression", "sslsessiontickets", "sslusestapling", "sslstaplingcache", "sslsessioncache",
    "sslsessioncachetimeout", "sslopensslconfcmd", "sslproxyengine", "startservers",
    "minspareservers", "maxspareservers", "maxrequestworkers", "maxconnectionsperchild",
    "serverlimit", "threadsperchild", "threadlimit", "minsparethreads", "maxsparethreads",
    "maxclients", "maxrequestsperchild", "enableexceptionhook", "extendedstatus",
    "defaultlanguage", "modmimeusepathinfo", "typesconfig", "mimemagicfile", "addtype",
    "removelanguage", "removecharset", "substitute", "substitutemaxlinelength",
    "substituteinheritbefore", "xbithack", "ssistarttag", "ssiendtag", "ssierrormsg",
    "ssitimeformat", "ssiundefinedecho", "ssilastmodified", "ssietag", "requestreadtimeout",
    "rlimitcpu", "rlimitmem", "rlimitnproc", "scriptinterpretersource", "scriptlog",
    "scriptloglength", "scriptlogbuffer", "scriptsock", "cgiscripttimeout", "qualifyredirecturl",
    "regexdefaultoptions", "rewritelock",
    // Debian's stock mods-available and conf-available, and modules sites commonly load:
    // caches, WebDAV's lock database, mod_proxy_html, mod_status, mod_ssl's process-wide
    // settings, user directories, mod_remoteip (which only says where the client's address
    // comes from), logs and limits.
    "cachedirlength", "cachedirlevels", "cacheroot", "cacheenable", "cachedisable",
    "cachequickhandler", "cacheignorenolastmod", "cachedefaultexpire", "cachemaxexpire",
    "cachelock", "cachelockpath", "cachelockmaxage", "cacheheader", "cachedetailheader",
    "davlockdb", "davmintimeout", "davdepthinfinity", "proxyftpdircharset",
    "proxyhtmlevents", "proxyhtmllinks", "proxyhtmlenable", "proxyhtmlurlmap",
    "proxyhtmlextended", "proxyhtmlinterp", "proxyhtmldoctype", "proxyhtmlmeta",
    "proxyhtmlstripcomments", "proxyhtmlbufsize", "proxyhtmlcharsetout", "proxyhtmlfixups",
    "proxyhtmllogverbose", "proxystatus", "proxyiobuffersize", "proxymaxforwards",
    "proxyreceivebuffersize", "proxybadheader", "ssloptions", "sslpassphrasedialog",
    "sslrandomseed", "sslstaplingrespondertimeout", "sslstaplingreturnrespondererrors",
    "sslstaplingfaketrylater", "sslinsecurerenegotiation", "sslstrictsnivhostcheck",
    "userdir", "remoteipheader", "remoteipinternalproxy", "remoteiptrustedproxy",
    "remoteipproxiesheader", "remoteipinternalproxylist", "remoteiptrustedproxylist",
    "limitinternalrecursion", "globallog", "bufferedlogs", "errorlogformat", "logiotrackttfb",
    "forensiclog", "mmapfile", "cachefile", "phpinidir", "addoutputfilterbytype",
    "outputsed", "inputsed", "sedbuffer", "brotlicompressionquality",
    "brotlicompressionwindow", "brotlicompressionmaxinputblock", "brotlifilternote",
    "deflatefilternote", "deflateinflatelimitrequestbody", "deflatealteretag",
    "listenbacklog", "listencoresbucketsratio", "receivebuffersize", "sendbuffersize",
    "asyncrequestworkerfactor", "gracefulshutdowntimeout", "maxmemfree", "threadstacksize",
    "scoreboardfile", "coredumpdirectory", "enablesendfile", "allowencodedslashes",
    "httpprotocoloptions", "maxrangeoverlaps", "maxrangereversals", "maxranges",
    "seerequesttail", "stricthostcheck", "qualifyredirecturl", "protocolshonororder",
    "h2moderntlsonly", "h2upgrade", "h2maxsessionstreams", "h2streammaxmemsize",
    "h2windowsize", "h2copyfiles", "h2earlyhints", "h2pushpriority", "h2serializeheaders",
    "h2tlscooldownsecs", "h2tlswarmupsize", "h2maxworkeridleseconds", "h2maxworkers",
    "h2minworkers", "h2direct",
];

/// Apache sections: how their content is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// A place (`<Directory>`, `<Files>`, `<Location>`...): its rules govern it.
    Place,
    /// A server-side condition (`<IfModule>`, `<IfDefine>`...) or a grouping
    /// (`<RequireAll>`): its content is read as if it were not there.
    Transparent,
    /// `<VirtualHost>`: read when it is the one that answers the site's requests.
    VirtualHost,
    /// `<Limit>` or `<LimitExcept>`: applies to some methods only.
    Methods,
    /// `<If>`, `<ElseIf>`, `<Else>`: an expression on the request, which may name who asks.
    Condition,
    /// Applies to other traffic than the site's own files (`<Proxy>`): not read.
    Elsewhere,
    /// Not known to the agent.
    Unknown,
}

/// How an Apache section's content is read.
pub(crate) fn apache_section(name: &str) -> Section {
    match name.to_ascii_lowercase().as_str() {
        "directory" | "directorymatch" | "files" | "filesmatch" | "location" | "locationmatch" => {
            Section::Place
        }
        "ifmodule" | "ifdefine" | "ifversion" | "iffile" | "ifdirective" | "ifsection"
        | "requireall" | "requireany" | "requirenone" => Section::Transparent,
        "virtualhost" => Section::VirtualHost,
        "limit" | "limitexcept" => Section::Methods,
        "if" | "elseif" | "else" => Section::Condition,
        "proxy" | "proxymatch" | "macro" => Section::Elsewhere,
        _ => Section::Unknown,
    }
}

/// What an Apache directive means to the judge. `Require`, `Allow` and the rewrite rules
/// are read by the reader itself, which knows their arguments' forms.
pub(crate) fn apache(name: &str, trusted: &[String]) -> Kind {
    let n = name.to_ascii_lowercase();
    match n.as_str() {
        "require" | "allow" => Kind::Grants,
        "sslrequire" => Kind::WhoAsks,
        _ if APACHE_REFUSES.contains(&n.as_str()) || n.starts_with("auth") => Kind::Refuses,
        _ if APACHE_SETS_VARIABLES.contains(&n.as_str()) => Kind::Seen,
        _ if APACHE_SEEN.contains(&n.as_str()) || trusted.contains(&n) => Kind::Seen,
        _ => Kind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_seen_refuse_grant_who_asks_or_unknown() {
        let none: &[String] = &[];
        assert_eq!(nginx("try_files", none), Kind::Seen);
        assert_eq!(nginx("fastcgi_pass", none), Kind::Seen);
        assert_eq!(nginx("Return", none), Kind::Seen);
        assert_eq!(nginx("allow", none), Kind::Grants);
        assert_eq!(nginx("deny", none), Kind::Refuses);
        assert_eq!(nginx("auth_basic", none), Kind::Refuses);
        assert_eq!(nginx("auth_request", none), Kind::WhoAsks);
        assert_eq!(nginx("auth_anything_new", none), Kind::Unknown);
        assert_eq!(nginx("js_content", none), Kind::Unknown);
        assert_eq!(nginx("js_content", &["js_content".into()]), Kind::Seen);
        assert_eq!(apache("Require", none), Kind::Grants);
        assert_eq!(apache("Allow", none), Kind::Grants);
        assert_eq!(apache("AuthType", none), Kind::Refuses);
        assert_eq!(apache("Order", none), Kind::Refuses);
        assert_eq!(apache("BrowserMatch", none), Kind::Seen);
        assert_eq!(apache("SetEnvIf", none), Kind::Seen);
        assert_eq!(apache("SSLRequire", none), Kind::WhoAsks);
        assert_eq!(apache("ModSecurityEnabled", none), Kind::Unknown);
        assert_eq!(apache_section("Files"), Section::Place);
        assert_eq!(apache_section("If"), Section::Condition);
        assert_eq!(apache_section("Whatever"), Section::Unknown);
        assert!(nginx_variable_same_for_all("arg_page"));
        assert!(!nginx_variable_same_for_all("remote_addr"));
        assert!(nginx_client_values_allowed("proxy_set_header"));
        assert!(!nginx_client_values_allowed("root"));
    }
}
