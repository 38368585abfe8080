import Foundation

/// The parts of a `Content-Range` header (RFC 9110 §14.4): `bytes FIRST-LAST/SIZE`, or `bytes */SIZE` on a 416.
struct ContentRange: Equatable {
    /// The bytes sent, nil for `*/SIZE`.
    let range: Range<Int64>?
    let size: Int64

    init?(_ header: String) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count)
        let parts = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let size = Int64(parts[1]), size >= 0 else { return nil }
        self.size = size
        if parts[0] == "*" {
            range = nil
            return
        }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first >= 0, last >= first, last < size
        else { return nil }
        range = first..<(last + 1)
    }
}
