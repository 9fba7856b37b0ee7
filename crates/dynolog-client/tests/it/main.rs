//! Integration tests of dynolog-client against an in-process fake daemon
//! that speaks the real framing and sends the real reply shapes.

mod daemon;
mod fake;
mod hook;
mod protocol;
mod trigger;

use test_support::required;
