//! A DNS server on loopback for the tests: every test server asks it (`--dns-server`, set by
//! the harness) for the TXT records that prove control of a custom hostname, and it answers
//! from the records the tests publish, as a hostname's owner would publish them. Any other
//! name does not exist. One server for the whole run, on a thread of its own, since each
//! test has a runtime of its own.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Mutex, OnceLock};

use serde_json::json;

use crate::harness::{Persona, TestApp};

/// The records published: name (lower case, no trailing dot) → texts.
type Records = Mutex<HashMap<String, Vec<String>>>;

fn running() -> &'static (SocketAddr, Records) {
    static SERVER: OnceLock<(SocketAddr, Records)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("a loopback UDP port");
        let addr = socket.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                let records = &running().1;
                let answer = answer(&buf[..n], &records.lock().unwrap());
                if let Some(answer) = answer {
                    let _ = socket.send_to(&answer, from);
                }
            }
        });
        (addr, Mutex::new(HashMap::new()))
    })
}

/// The address of the tests' DNS server.
pub fn server() -> SocketAddr {
    running().0
}

/// Publishes a TXT record `name` holding `text`, beside those it holds already.
pub fn publish(name: &str, text: &str) {
    let mut records = running().1.lock().unwrap();
    records
        .entry(name.to_ascii_lowercase())
        .or_default()
        .push(text.to_string());
}

/// Withdraws the TXT record `name` holding `text`.
pub fn withdraw(name: &str, text: &str) {
    let mut records = running().1.lock().unwrap();
    if let Some(texts) = records.get_mut(&name.to_ascii_lowercase()) {
        texts.retain(|t| t != text);
    }
}

/// The answer to a question: its TXT records, or "no such name".
fn answer(question: &[u8], records: &HashMap<String, Vec<String>>) -> Option<Vec<u8>> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let n = usize::from(*question.get(at)?);
        at += 1;
        if n == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(question.get(at..at + n)?).to_ascii_lowercase());
        at += n;
    }
    let end = at + 4;
    let kind = u16::from_be_bytes([*question.get(at)?, *question.get(at + 1)?]);
    let texts = records
        .get(&labels.join("."))
        .filter(|t| !t.is_empty() && kind == 16);
    let mut a = question.get(..end)?.to_vec();
    a[2] = 0x81;
    a[3] = if texts.is_some() { 0x80 } else { 0x83 };
    let count = texts.map_or(0, Vec::len) as u16;
    a[6..8].copy_from_slice(&count.to_be_bytes());
    a[8..12].fill(0);
    for text in texts.into_iter().flatten() {
        a.extend_from_slice(&[0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60]);
        a.extend_from_slice(&(text.len() as u16 + 1).to_be_bytes());
        a.push(text.len() as u8);
        a.extend_from_slice(text.as_bytes());
    }
    Some(a)
}

/// Proves control of `host` for `site` as its owner would: publishes the site's record and
/// has its admin ask for the check. (The hostname tests read the record from the app's site
/// screen, where admins find it; here it is made as the server makes it.)
pub async fn prove(app: &TestApp, admin: &Persona, site: &str, host: &str) {
    let record = quire_server::domain::hostnames::challenge(&app.state, site, host);
    publish(&record.name, &record.value);
    app.patch(admin, &format!("/v1/custom-hostnames/{host}"), json!({}))
        .await
        .expect(204);
}
