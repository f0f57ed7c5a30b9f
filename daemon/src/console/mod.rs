//! What the two live consoles share: who may use them ([`access`]), the page's common
//! stylesheet and script ([`assets`]), served from each binary so that no CDN and no build step
//! stands between an operator and the page, and the HTTP pieces both servers are made of
//! ([`http`]: the gate as middleware, the page and asset responses, errors, the lazily opened
//! read-only store).

pub mod access;
pub mod assets;
pub mod http;
