import Foundation
import NIOHTTP1

/// The decoders of what an origin sends, as fuzz targets (`scripts/fuzz.sh`, `Fuzz/README.md`): each takes
/// arbitrary bytes, decodes them as the origin's answer would be decoded, and returns what is wrong with the
/// result (an invariant the decoder must keep), or nil. A crash or hang is the fuzzer's to catch.
package enum OriginFuzzing {
    /// `Content-Range`: what parses names bytes inside the size, and prints back to itself.
    package static func contentRange(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let parsed = ContentRange(String(decoding: bytes, as: UTF8.self)) else { return nil }
        guard parsed.size >= 0 else { return "a negative size \(parsed.size)" }
        if let range = parsed.range {
            guard range.lowerBound >= 0, range.upperBound <= parsed.size, !range.isEmpty else {
                return "range \(range) outside size \(parsed.size)"
            }
        }
        let printed =
            "bytes " + (parsed.range.map { "\($0.lowerBound)-\($0.upperBound - 1)" } ?? "*") + "/\(parsed.size)"
        return ContentRange(printed) == parsed ? nil : "\(printed) does not parse back to itself"
    }

    /// `Retry-After`: a wait that parses is never negative, and the wait taken is capped.
    package static func retryAfter(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let wait = Backoff.retryAfter(String(decoding: bytes, as: UTF8.self)) else { return nil }
        guard wait >= .zero else { return "a negative Retry-After \(wait)" }
        let cap = Duration.seconds(30)
        let delay = Backoff.delay(attempt: 1, base: .milliseconds(100), retryAfter: wait, cap: cap)
        return delay <= cap && delay >= .zero ? nil : "a delay \(delay) past its cap"
    }

    /// A response's headers (`Name: value` lines), as both dialects read them: the version is never empty,
    /// a version that can be pinned starts with a quote (HTTP) and `Content-Range` keeps its invariants.
    package static func responseHeaders(_ bytes: UnsafeRawBufferPointer) -> String? {
        var headers = HTTPHeaders()
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            // NIO's parser refuses a name that is not ASCII before any dialect sees it (and `add` traps on one).
            guard let colon = line.firstIndex(of: ":"), line[..<colon].allSatisfy(\.isASCII) else { continue }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let http = HTTPDialect(base: "http://127.0.0.1/", headers: [])
        let s3 = S3Dialect(endpoint: "http://127.0.0.1", bucket: "b", prefix: "", headers: [], signer: nil)
        for dialect in [http as any OriginDialect, s3] {
            let version = dialect.version(of: headers, size: 1)
            guard !version.isEmpty else { return "an empty version from \(headers)" }
            if dialect is HTTPDialect, dialect.pins(version), !version.hasPrefix("\"") {
                return "HTTP pins \(version), not a strong ETag"
            }
            _ = dialect.namesVersion(headers)
        }
        for value in headers["content-range"] {
            if let problem = Array(value.utf8).withUnsafeBytes({ contentRange($0) }) { return problem }
        }
        for value in headers["retry-after"] {
            if let problem = Array(value.utf8).withUnsafeBytes({ retryAfter($0) }) { return problem }
        }
        return nil
    }

    /// nginx's JSON autoindex: every entry stays inside its folder and has a size that is a byte count.
    package static func nginxListing(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let (files, folders) = NginxListing.entries(json: Array(bytes), folder: "d/") else { return nil }
        for file in files {
            let name = file.item.dropFirst(2)
            guard file.item.hasPrefix("d/"), !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                return "file \(file.item) leaves its folder"
            }
            guard file.size >= 0 else { return "file \(file.item) has size \(file.size)" }
        }
        for folder in folders {
            let name = folder.dropFirst(2).dropLast()
            guard folder.hasPrefix("d/"), folder.hasSuffix("/"), !name.isEmpty, !name.contains("/"), name != ".",
                name != ".."
            else { return "folder \(folder) leaves its folder" }
        }
        return nil
    }

    /// S3's `ListObjectsV2` and error XML: keys are never empty, sizes are byte counts, and a truncated page
    /// names where to go on or is the last.
    package static func s3Listing(_ bytes: UnsafeRawBufferPointer) -> String? {
        let xml = String(decoding: bytes, as: UTF8.self)
        let listing = S3Listing(xml: xml)
        for entry in listing.entries {
            guard !entry.key.isEmpty, entry.size >= 0 else { return "entry \(entry.key) of size \(entry.size)" }
        }
        _ = S3Listing.errorCode(in: xml)
        return nil
    }
}
