import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// The few elements of S3's XML that origins read: a `ListObjectsV2` page and an error's `Code`.
struct S3Listing {
    struct Entry {
        let key: String
        let size: Int64
        let etag: String?
        let lastModified: Double?
    }
    var entries: [Entry] = []
    var isTruncated = false
    var nextToken: String?

    init(xml: String) {
        for contents in Self.elements("Contents", in: xml) {
            // A size that is no count of bytes drops the entry: sizes from the origin become file lengths.
            guard let key = Self.elements("Key", in: contents).first, !key.isEmpty,
                let size = Int64(Self.elements("Size", in: contents).first ?? ""), size >= 0
            else { continue }
            entries.append(
                Entry(
                    key: key, size: size,
                    etag: Self.elements("ETag", in: contents).first,
                    lastModified: Self.elements("LastModified", in: contents).first.flatMap(Self.date(from:))))
        }
        isTruncated = Self.elements("IsTruncated", in: xml).first == "true"
        nextToken = Self.elements("NextContinuationToken", in: xml).first
    }

    static func errorCode(in xml: String) -> String? { elements("Code", in: xml).first }

    /// Parses `LastModified` (ISO 8601, with or without fractional seconds).
    static func date(from text: String) -> Double? {
        OriginDates.seconds(text) { text in
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text)
        }
    }

    /// The decoded text of every `<name>…</name>` in `xml`, in order.
    static func elements(_ name: String, in xml: String) -> [String] {
        var found: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(name)>"),
            let close = rest.range(of: "</\(name)>", range: open.upperBound..<rest.endIndex)
        {
            found.append(decodeEntities(String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        return found
    }

    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&#34;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }
}
