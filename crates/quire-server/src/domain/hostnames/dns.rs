//! A DNS client for one kind of question: the TXT records of a name, asked of one server
//! over UDP (again over TCP when the answer was truncated). It reads the records that prove
//! control of a custom hostname; the server is `--dns-server`, else the system's first
//! nameserver, so that tests and operators name the one that answers.

use std::io::{Error, ErrorKind};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The TXT record type.
const TXT: u16 = 16;
/// The Internet class.
const CLASS_IN: u16 = 1;
/// The EDNS0 option record type.
const OPT: u16 = 41;
/// Largest answer taken over UDP, as announced to the server (EDNS0).
const UDP_PAYLOAD: u16 = 1232;
/// How long one UDP try waits before the question is sent again.
const TRY_WAIT: Duration = Duration::from_millis(1500);

/// The server to ask: `configured`, else the first `nameserver` of `/etc/resolv.conf`.
pub fn server(configured: Option<SocketAddr>) -> Option<SocketAddr> {
    if configured.is_some() {
        return configured;
    }
    let conf = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    conf.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next()? == "nameserver")
            .then(|| words.next()?.parse::<IpAddr>().ok())
            .flatten()
            .map(|ip| SocketAddr::new(ip, 53))
    })
}

/// The text of each TXT record of `name` (a record's strings joined), none when the name
/// does not exist; an error when the server cannot be reached within `wait` or fails.
pub async fn txt(server: SocketAddr, name: &str, wait: Duration) -> std::io::Result<Vec<String>> {
    let id: u16 = rand::random();
    let question =
        query(id, name).ok_or_else(|| Error::new(ErrorKind::InvalidInput, "not a DNS name"))?;
    let asked = async {
        let answer = udp(server, id, &question).await?;
        // Truncated: the whole answer comes over TCP.
        let answer = match answer.get(2).is_some_and(|flags| flags & 0x02 != 0) {
            true => tcp(server, &question).await?,
            false => answer,
        };
        parse(&answer, id)
    };
    tokio::time::timeout(wait, asked)
        .await
        .map_err(|_| Error::new(ErrorKind::TimedOut, "the DNS server did not answer"))?
}

/// A recursive question for the TXT records of `name`, with an EDNS0 record announcing
/// [`UDP_PAYLOAD`]; none when `name` is no DNS name.
fn query(id: u16, name: &str) -> Option<Vec<u8>> {
    let mut q = Vec::with_capacity(name.len() + 32);
    q.extend_from_slice(&id.to_be_bytes());
    // Recursion desired; one question, one additional record.
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1]);
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return None;
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    if q.len() - 12 > 255 {
        return None;
    }
    q.extend_from_slice(&TXT.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    q.push(0);
    q.extend_from_slice(&OPT.to_be_bytes());
    q.extend_from_slice(&UDP_PAYLOAD.to_be_bytes());
    q.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    Some(q)
}

/// Asks over UDP, twice at most; an answer is taken only from the server, with the
/// question's id.
async fn udp(server: SocketAddr, id: u16, question: &[u8]) -> std::io::Result<Vec<u8>> {
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => ([0u16; 8], 0).into(),
    };
    let socket = tokio::net::UdpSocket::bind(local).await?;
    socket.connect(server).await?;
    let mut buf = vec![0u8; usize::from(UDP_PAYLOAD)];
    for _ in 0..2 {
        socket.send(question).await?;
        let tried = tokio::time::timeout(TRY_WAIT, async {
            loop {
                let n = socket.recv(&mut buf).await?;
                if n >= 2 && buf[..2] == id.to_be_bytes() {
                    return Ok::<_, Error>(buf[..n].to_vec());
                }
            }
        })
        .await;
        if let Ok(answer) = tried {
            return answer;
        }
    }
    Err(Error::new(
        ErrorKind::TimedOut,
        "the DNS server did not answer",
    ))
}

/// Asks over TCP (the message after its length in two bytes).
async fn tcp(server: SocketAddr, question: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut stream = tokio::net::TcpStream::connect(server).await?;
    let mut sent = (question.len() as u16).to_be_bytes().to_vec();
    sent.extend_from_slice(question);
    stream.write_all(&sent).await?;
    let len = stream.read_u16().await?;
    let mut answer = vec![0u8; usize::from(len)];
    stream.read_exact(&mut answer).await?;
    Ok(answer)
}

fn malformed() -> Error {
    Error::new(ErrorKind::InvalidData, "a malformed DNS answer")
}

fn u16_at(msg: &[u8], at: usize) -> std::io::Result<u16> {
    msg.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .ok_or_else(malformed)
}

/// Where the name starting at `at` ends (a compression pointer ends it).
fn skip_name(msg: &[u8], mut at: usize) -> std::io::Result<usize> {
    loop {
        let len = *msg.get(at).ok_or_else(malformed)?;
        match len {
            0 => return Ok(at + 1),
            l if l & 0xC0 == 0xC0 => return Ok(at + 2),
            l if l & 0xC0 != 0 => return Err(malformed()),
            l => at += 1 + usize::from(l),
        }
    }
}

/// The TXT records of an answer to question `id`.
fn parse(msg: &[u8], id: u16) -> std::io::Result<Vec<String>> {
    // A header is 12 bytes: anything shorter is no answer (and must not be indexed).
    if msg.len() < 12 || u16_at(msg, 0)? != id || msg[2] & 0x80 == 0 {
        return Err(malformed());
    }
    match msg[3] & 0x0F {
        0 => {}
        // The name does not exist: it has no records.
        3 => return Ok(Vec::new()),
        code => {
            return Err(Error::other(format!(
                "the DNS server answered with error {code}"
            )))
        }
    }
    let (questions, answers) = (u16_at(msg, 4)?, u16_at(msg, 6)?);
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(msg, at)? + 4;
    }
    let mut found = Vec::new();
    for _ in 0..answers {
        at = skip_name(msg, at)?;
        let (kind, class) = (u16_at(msg, at)?, u16_at(msg, at + 2)?);
        let len = usize::from(u16_at(msg, at + 8)?);
        at += 10;
        let data = msg.get(at..at + len).ok_or_else(malformed)?;
        at += len;
        if kind != TXT || class != CLASS_IN {
            // A CNAME on the way to the records, for instance.
            continue;
        }
        let mut text = Vec::new();
        let mut rest = data;
        while let Some((&n, tail)) = rest.split_first() {
            let piece = tail.get(..usize::from(n)).ok_or_else(malformed)?;
            text.extend_from_slice(piece);
            rest = &tail[usize::from(n)..];
        }
        found.push(String::from_utf8_lossy(&text).into_owned());
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_dns_cannot_carry_are_not_asked() {
        assert!(query(1, "_quire-challenge.docs.example.com").is_some());
        assert!(query(1, "a..b").is_none());
        assert!(query(1, &format!("{}.com", "a".repeat(64))).is_none());
        let long = vec!["a".repeat(60); 5].join(".");
        assert!(query(1, &long).is_none());
    }

    #[test]
    fn an_answer_yields_its_txt_records_and_skips_the_rest() {
        let mut msg = query(7, "x.example.com").unwrap();
        // Drop the additional record; set the answer flag and two answers.
        msg.truncate(msg.len() - 11);
        msg[2] = 0x81;
        msg[3] = 0x80;
        msg[7] = 2;
        msg[11] = 0;
        // A CNAME, then a TXT record of two strings, each named by a pointer.
        msg.extend_from_slice(&[0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xC0, 12]);
        msg.extend_from_slice(&[0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, 8]);
        msg.extend_from_slice(&[3, b'a', b'b', b'c', 3, b'd', b'e', b'f']);
        assert_eq!(parse(&msg, 7).unwrap(), vec!["abcdef".to_string()]);
        assert!(parse(&msg, 8).is_err(), "another question's answer");
        msg[3] = 0x83;
        assert_eq!(parse(&msg, 7).unwrap(), Vec::<String>::new());
        msg[3] = 0x82;
        assert!(parse(&msg, 7).is_err());
        msg[3] = 0x80;
        msg.truncate(msg.len() - 3);
        assert!(parse(&msg, 7).is_err(), "cut short");
        for short in [&[0u8, 7][..], &[0, 7, 0x81], &[0, 7, 0x81, 0x80]] {
            assert!(parse(short, 7).is_err(), "a header cut short: {short:?}");
        }
    }
}
