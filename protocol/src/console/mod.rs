//! What the two live consoles share: who may use them ([`access`]) and the page's common
//! stylesheet and script ([`assets`]), served from each binary so that no CDN and no build step
//! stands between an operator and the page.

pub mod access;
pub mod assets;
