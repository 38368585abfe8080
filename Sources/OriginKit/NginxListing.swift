import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SigV4

/// What nginx's JSON autoindex tells of a file beyond its name and size.
enum NginxListing {
    /// The strong ETag nginx sends for a static file: its modification time and size in hex
    /// (`ngx_http_set_etag`). A server that spells its ETags otherwise is caught by the fetch's `If-Match`,
    /// which then learns the real version.
    static func etag(modified: Double, size: Int64) -> String {
        "\"\(String(UInt64(max(0, modified)), radix: 16))-\(String(UInt64(max(0, size)), radix: 16))\""
    }

    /// The files and subfolders (each ending in `/`) of one folder's `autoindex_format json` listing, or nil
    /// when `json` is not a JSON array.
    ///
    /// Entries whose name could leave the folder or alias it (empty, `.`, `..`, holding `/` or NUL) are
    /// dropped: a subfolder named `.` would list the same folder forever. A negative or absent size is
    /// dropped too: sizes from the origin become file lengths.
    static func entries(json: [UInt8], folder: String) -> (files: [RemoteEntry], folders: [String])? {
        guard let listing = try? JSONSerialization.jsonObject(with: Data(json)) as? [Any] else { return nil }
        var files: [RemoteEntry] = []
        var folders: [String] = []
        for case let entry as [String: Any] in listing {
            guard let name = entry["name"] as? String, let type = entry["type"] as? String,
                !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0")
            else { continue }
            if type == "directory" {
                folders.append(folder + name + "/")
            } else if type == "file" {
                // Through Double: NSNumber.int64Value traps on a size past Int64 (`1e30`).
                guard let number = entry["size"] as? NSNumber,
                    let size = Int64(exactly: number.doubleValue.rounded(.down)), size >= 0
                else { continue }
                let modified = (entry["mtime"] as? String).flatMap(date(from:))
                files.append(
                    RemoteEntry(
                        item: folder + name, size: size, version: modified.map { etag(modified: $0, size: size) },
                        modificationDate: modified))
            }
        }
        return (files, folders)
    }

    /// Parses autoindex's `mtime`, an RFC 1123 date (`Wed, 25 Nov 2026 02:27:53 GMT`).
    static func date(from text: String) -> Double? {
        OriginDates.seconds(text) { text in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            return formatter.date(from: text)
        }
    }
}
