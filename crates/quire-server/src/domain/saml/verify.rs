//! Checks a SAML response posted to the ACS: the XML signature (of the response or of its
//! assertion) against the provider's certificate, then issuer, destination, audience,
//! recipient, validity window and the request it answers. Every field is read from the
//! elements whose signature verified, never found again by searching the document, so that
//! a signed assertion moved aside for a forged one (signature wrapping) is refused.

use std::collections::HashSet;

use bergshamra_dsig::{DsigContext, VerifyResult};
use uppsala::{Document, NodeId};

use super::{Refusal, NS_ASSERTION, NS_PROTOCOL};

const NS_DSIG: &str = "http://www.w3.org/2000/09/xmldsig#";
const SUCCESS: &str = "urn:oasis:names:tc:SAML:2.0:status:Success";
const BEARER: &str = "urn:oasis:names:tc:SAML:2.0:cm:bearer";
const EMAIL_FORMAT: &str = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress";
/// Transforms a SAML signature may use; anything else (XPath, XSLT) is refused before
/// verification.
const TRANSFORMS: &[&str] = &[
    "http://www.w3.org/2000/09/xmldsig#enveloped-signature",
    "http://www.w3.org/2001/10/xml-exc-c14n#",
    "http://www.w3.org/2001/10/xml-exc-c14n#WithComments",
    "http://www.w3.org/TR/2001/REC-xml-c14n-20010315",
    "http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments",
];
/// Signature algorithms accepted: RSA and ECDSA with SHA-2 (SHA-1 is refused).
const SIGNATURE_METHODS: &[&str] = &[
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384",
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512",
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256",
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384",
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512",
];
/// Digest algorithms accepted (SHA-2).
const DIGEST_METHODS: &[&str] = &[
    "http://www.w3.org/2001/04/xmlenc#sha256",
    "http://www.w3.org/2001/04/xmldsig-more#sha384",
    "http://www.w3.org/2001/04/xmlenc#sha512",
];
/// Attribute names that carry the user's e-mail, in order of preference.
const EMAIL_ATTRIBUTES: &[&str] = &[
    "email",
    "mail",
    "emailAddress",
    "urn:oid:0.9.2342.19200300.100.1.3",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
];
/// Attribute names that carry a display name, in order of preference.
const NAME_ATTRIBUTES: &[&str] = &[
    "displayName",
    "urn:oid:2.16.840.1.113730.3.1.241",
    "cn",
    "urn:oid:2.5.4.3",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
];

/// What the response must match.
#[derive(Debug)]
pub struct Expected {
    /// The provider's entity id (the issuer).
    pub issuer: String,
    /// The provider's certificate (DER).
    pub certificate: Vec<u8>,
    /// Quire's ACS URL for the provider (destination and recipient).
    pub acs: String,
    /// Quire's entity id for the provider (the audience).
    pub audience: String,
    /// Now, in milliseconds.
    pub now: i64,
    /// Tolerated clock skew, in milliseconds.
    pub skew: i64,
}

/// A verified assertion.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The assertion's id (accepted once).
    pub assertion_id: String,
    /// The AuthnRequest it answers.
    pub in_response_to: String,
    /// The user's e-mail.
    pub email: String,
    /// The user's display name, when given.
    pub name: Option<String>,
    /// Until when the assertion could be presented again (milliseconds).
    pub valid_until: i64,
}

fn refuse(reason: impl Into<String>) -> Refusal {
    Refusal::new(403, reason)
}

/// Verifies a decoded SAML response.
pub fn verify(xml: &str, expected: &Expected) -> Result<Verified, Refusal> {
    let doc = uppsala::Parser::new()
        .with_max_depth(48)
        .with_forbid_dtd(true)
        .parse(xml)
        .map_err(|e| {
            Refusal::new(
                400,
                format!("The SAML response is not well-formed XML: {e}"),
            )
        })?;
    let root = doc
        .document_element()
        .ok_or_else(|| Refusal::new(400, "The SAML response is empty."))?;
    if !is(&doc, root, NS_PROTOCOL, "Response") {
        return Err(Refusal::new(
            400,
            "The posted message is not a SAML Response.",
        ));
    }
    if !doc
        .get_elements_by_tag_name_ns(NS_ASSERTION, "EncryptedAssertion")
        .is_empty()
    {
        return Err(refuse("Encrypted assertions are not supported: configure the identity provider to sign, not encrypt, its assertions."));
    }
    let assertions = doc.get_elements_by_tag_name_ns(NS_ASSERTION, "Assertion");
    let assertion =
        match assertions.as_slice() {
            [one] if doc.parent(*one) == Some(root) => *one,
            [] => return Err(refuse("The SAML response holds no assertion.")),
            _ => return Err(refuse(
                "The SAML response must hold exactly one assertion, directly inside the response.",
            )),
        };
    check_signature(&doc, xml, root, assertion, expected)?;

    // The response: status, destination, the request it answers, its issuer if named.
    let status = child(&doc, root, NS_PROTOCOL, "Status")
        .and_then(|s| child(&doc, s, NS_PROTOCOL, "StatusCode"))
        .and_then(|c| doc.get_attribute(c, "Value"));
    if status != Some(SUCCESS) {
        return Err(refuse(format!(
            "The identity provider did not authenticate the user (status `{}`).",
            status.unwrap_or("none")
        )));
    }
    let destination = doc.get_attribute(root, "Destination");
    if destination != Some(expected.acs.as_str()) {
        return Err(refuse(format!(
            "The response's Destination `{}` is not this provider's ACS URL `{}`.",
            destination.unwrap_or("(none)"),
            expected.acs
        )));
    }
    let in_response_to = doc
        .get_attribute(root, "InResponseTo")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            refuse("The response answers no request (InResponseTo is missing): logins start at Quire's start URL.")
        })?
        .to_string();
    if let Some(issuer) = child(&doc, root, NS_ASSERTION, "Issuer") {
        check_issuer(&doc, issuer, expected, "response")?;
    }

    // The assertion: issuer, subject confirmation, conditions.
    let assertion_id = doc
        .get_attribute(assertion, "ID")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| refuse("The assertion has no ID."))?
        .to_string();
    let issuer = child(&doc, assertion, NS_ASSERTION, "Issuer")
        .ok_or_else(|| refuse("The assertion names no Issuer."))?;
    check_issuer(&doc, issuer, expected, "assertion")?;
    if let Some(instant) = doc.get_attribute(assertion, "IssueInstant") {
        if time(instant, "IssueInstant")? > expected.now + expected.skew {
            return Err(refuse(
                "The assertion was issued in the future (check the clocks).",
            ));
        }
    }
    let subject = child(&doc, assertion, NS_ASSERTION, "Subject")
        .ok_or_else(|| refuse("The assertion has no Subject."))?;
    let mut valid_until = confirm_subject(&doc, subject, expected, &in_response_to)?;
    let conditions = child(&doc, assertion, NS_ASSERTION, "Conditions")
        .ok_or_else(|| refuse("The assertion has no Conditions (validity window and audience)."))?;
    valid_until = valid_until.max(check_conditions(&doc, conditions, expected)?);

    let (email, name) = identity(&doc, assertion, subject)?;
    Ok(Verified {
        assertion_id,
        in_response_to,
        email,
        name,
        valid_until: valid_until + expected.skew,
    })
}

/// The signature must verify against the provider's key alone and cover the response (the
/// root) or the very assertion read; any signature that fails refuses the whole message.
fn check_signature(
    doc: &Document<'_>,
    xml: &str,
    root: NodeId,
    assertion: NodeId,
    expected: &Expected,
) -> Result<(), Refusal> {
    let signatures = doc.get_elements_by_tag_name_ns(NS_DSIG, "Signature");
    if signatures.is_empty() {
        return Err(refuse(
            "The SAML response is not signed: the identity provider must sign the response or the assertion.",
        ));
    }
    // Only same-document references and the usual transforms: a reference must not make
    // the verifier read anything outside the message.
    for reference in doc.get_elements_by_tag_name_ns(NS_DSIG, "Reference") {
        let uri = doc.get_attribute(reference, "URI").unwrap_or("");
        if !(uri.is_empty() || uri.starts_with('#')) {
            return Err(refuse("A signature reference points outside the message."));
        }
    }
    for transform in doc.get_elements_by_tag_name_ns(NS_DSIG, "Transform") {
        let algorithm = doc.get_attribute(transform, "Algorithm").unwrap_or("");
        if !TRANSFORMS.contains(&algorithm) {
            return Err(refuse(format!(
                "The signature uses a transform Quire does not accept: `{algorithm}`."
            )));
        }
    }
    for (element, allowed) in [
        ("SignatureMethod", SIGNATURE_METHODS),
        ("DigestMethod", DIGEST_METHODS),
    ] {
        for node in doc.get_elements_by_tag_name_ns(NS_DSIG, element) {
            let algorithm = doc.get_attribute(node, "Algorithm").unwrap_or("");
            if !allowed.contains(&algorithm) {
                return Err(refuse(format!(
                    "The signature uses an algorithm Quire does not accept ({element} `{algorithm}`): use SHA-256 or stronger."
                )));
            }
        }
    }
    let key = bergshamra_keys::loader::load_x509_cert_der(&expected.certificate)
        .map_err(|_| refuse("The provider's certificate cannot be used to verify signatures."))?;
    let mut keys = bergshamra_keys::KeysManager::new();
    keys.add_key(key);
    // Only the configured key is trusted (never one the message carries), and each
    // reference's target must be the signature's parent, an ancestor or a sibling.
    // SAML's `ID` attribute is among the id attributes the verifier registers by default.
    let ctx = DsigContext::new(keys);
    let results = bergshamra_dsig::verify::verify_all_document_with_source(&ctx, doc, Some(xml))
        .map_err(|e| refuse(format!("The signature could not be checked: {e}.")))?;
    let mut covered = HashSet::new();
    for result in results {
        match result {
            VerifyResult::Valid { references, .. } => {
                for r in &references {
                    match r.resolved_node {
                        Some(node) => {
                            covered.insert(node);
                        }
                        // `URI=""` signs the whole document as posted.
                        None if r.uri.is_empty() && r.digest_verified => {
                            covered.insert(root);
                        }
                        None => {}
                    }
                }
            }
            VerifyResult::Invalid { reason } => {
                return Err(refuse(format!(
                    "The signature does not verify against the provider's certificate ({reason})."
                )));
            }
        }
    }
    if covered.contains(&doc.root()) || covered.contains(&root) || covered.contains(&assertion) {
        Ok(())
    } else {
        Err(refuse(
            "No valid signature covers the response or the assertion it holds.",
        ))
    }
}

fn check_issuer(
    doc: &Document<'_>,
    issuer: NodeId,
    expected: &Expected,
    what: &str,
) -> Result<(), Refusal> {
    let value = doc.text_content_deep(issuer);
    if value.trim() != expected.issuer {
        return Err(refuse(format!(
            "The {what}'s Issuer `{}` is not the provider's entity ID `{}`.",
            value.trim(),
            expected.issuer
        )));
    }
    Ok(())
}

/// A bearer confirmation for Quire's ACS, answering the request, not expired; returns its
/// end of validity.
fn confirm_subject(
    doc: &Document<'_>,
    subject: NodeId,
    expected: &Expected,
    in_response_to: &str,
) -> Result<i64, Refusal> {
    let mut why = "The assertion's Subject has no bearer confirmation.".to_string();
    for confirmation in doc.child_elements_by_name_ns(subject, NS_ASSERTION, "SubjectConfirmation")
    {
        if doc.get_attribute(confirmation, "Method") != Some(BEARER) {
            continue;
        }
        let Some(data) = child(doc, confirmation, NS_ASSERTION, "SubjectConfirmationData") else {
            why = "The bearer confirmation has no SubjectConfirmationData.".into();
            continue;
        };
        let recipient = doc.get_attribute(data, "Recipient");
        if recipient != Some(expected.acs.as_str()) {
            why = format!(
                "The confirmation's Recipient `{}` is not this provider's ACS URL.",
                recipient.unwrap_or("(none)")
            );
            continue;
        }
        if let Some(answers) = doc.get_attribute(data, "InResponseTo") {
            if answers != in_response_to {
                why = "The confirmation answers another request than the response.".into();
                continue;
            }
        }
        let Some(until) = doc.get_attribute(data, "NotOnOrAfter") else {
            why = "The confirmation has no NotOnOrAfter.".into();
            continue;
        };
        let until = time(until, "SubjectConfirmationData NotOnOrAfter")?;
        if until <= expected.now - expected.skew {
            why = "The assertion has expired (its confirmation's NotOnOrAfter has passed).".into();
            continue;
        }
        if let Some(before) = doc.get_attribute(data, "NotBefore") {
            if time(before, "SubjectConfirmationData NotBefore")? > expected.now + expected.skew {
                why = "The assertion's confirmation is not valid yet.".into();
                continue;
            }
        }
        return Ok(until);
    }
    Err(refuse(why))
}

/// The validity window and every audience restriction; returns the window's end.
fn check_conditions(
    doc: &Document<'_>,
    conditions: NodeId,
    expected: &Expected,
) -> Result<i64, Refusal> {
    if let Some(before) = doc.get_attribute(conditions, "NotBefore") {
        if time(before, "Conditions NotBefore")? > expected.now + expected.skew {
            return Err(refuse(
                "The assertion is not valid yet (Conditions NotBefore).",
            ));
        }
    }
    let until = doc
        .get_attribute(conditions, "NotOnOrAfter")
        .ok_or_else(|| refuse("The assertion's Conditions have no NotOnOrAfter."))?;
    let until = time(until, "Conditions NotOnOrAfter")?;
    if until <= expected.now - expected.skew {
        return Err(refuse(
            "The assertion has expired (Conditions NotOnOrAfter has passed).",
        ));
    }
    let restrictions =
        doc.child_elements_by_name_ns(conditions, NS_ASSERTION, "AudienceRestriction");
    if restrictions.is_empty() {
        return Err(refuse(
            "The assertion names no audience (AudienceRestriction).",
        ));
    }
    for restriction in restrictions {
        let audiences: Vec<String> = doc
            .child_elements_by_name_ns(restriction, NS_ASSERTION, "Audience")
            .into_iter()
            .map(|a| doc.text_content_deep(a).trim().to_string())
            .collect();
        if !audiences.contains(&expected.audience) {
            return Err(refuse(format!(
                "The assertion is meant for another audience ({}), not `{}`.",
                audiences.join(", "),
                expected.audience
            )));
        }
    }
    Ok(until)
}

/// The user's e-mail (an e-mail attribute, else an e-mail NameID) and display name.
fn identity(
    doc: &Document<'_>,
    assertion: NodeId,
    subject: NodeId,
) -> Result<(String, Option<String>), Refusal> {
    let mut attributes: Vec<(String, String)> = Vec::new();
    for statement in doc.child_elements_by_name_ns(assertion, NS_ASSERTION, "AttributeStatement") {
        for attribute in doc.child_elements_by_name_ns(statement, NS_ASSERTION, "Attribute") {
            let name = doc
                .get_attribute(attribute, "Name")
                .unwrap_or("")
                .to_string();
            if let Some(value) = child(doc, attribute, NS_ASSERTION, "AttributeValue") {
                attributes.push((name, doc.text_content_deep(value).trim().to_string()));
            }
        }
    }
    let find = |names: &[&str]| {
        names.iter().find_map(|n| {
            attributes
                .iter()
                .find(|(name, value)| name.eq_ignore_ascii_case(n) && !value.is_empty())
                .map(|(_, v)| v.clone())
        })
    };
    let name_id = child(doc, subject, NS_ASSERTION, "NameID");
    let email = find(EMAIL_ATTRIBUTES).or_else(|| {
        let id = name_id?;
        let value = doc.text_content_deep(id).trim().to_string();
        let format = doc.get_attribute(id, "Format");
        (format == Some(EMAIL_FORMAT) || crate::validate::email("NameID", &value).is_ok())
            .then_some(value)
    });
    let email = email.ok_or_else(|| {
        refuse("The assertion gives no e-mail address (an `email` attribute or an e-mail NameID).")
    })?;
    crate::validate::email("email", &email).map_err(|_| {
        refuse(format!(
            "The assertion's e-mail `{email}` is not a valid address."
        ))
    })?;
    let name = find(NAME_ATTRIBUTES).filter(|n| n.chars().count() <= 256);
    Ok((email, name))
}

fn is(doc: &Document<'_>, node: NodeId, ns: &str, name: &str) -> bool {
    doc.element(node)
        .is_some_and(|e| e.matches_name_ns(ns, name))
}

fn child(doc: &Document<'_>, parent: NodeId, ns: &str, name: &str) -> Option<NodeId> {
    doc.first_child_element_by_name_ns(parent, ns, name)
}

fn time(value: &str, field: &str) -> Result<i64, Refusal> {
    chrono::DateTime::parse_from_rfc3339(value.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            refuse(format!(
                "The assertion's {field} `{value}` is not a date-time."
            ))
        })
}
