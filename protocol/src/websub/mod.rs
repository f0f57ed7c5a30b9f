//! WebSub (W3C Recommendation, 23 January 2018): the parameters of subscription requests and
//! verification of intent, lease policy, and authenticated content distribution
//! (`X-Hub-Signature`), with compressed deliveries for callbacks that ask for them (RFC 7694).
//!
//! Hub and subscriber both use these types, so each side checks the other's messages exactly
//! as it builds its own.

mod body_coding;
mod signature;
mod subscription;

pub use body_coding::{
    BodyCoding, BodyCodingError, CALLBACK_ACCEPT, CALLBACK_ACCEPT_ENCODING,
    choose as choose_body_coding, choose_preferring as choose_body_coding_preferring,
    decode_delivery,
};
pub use signature::{SignatureAlgorithm, SignatureError, sign, verify};
pub use subscription::{
    CallbackQuery, Challenge, Denial, IntentVerification, LeasePolicy, MAX_SECRET_BYTES, Mode,
    SubscriptionRequest, WebSubError,
};
