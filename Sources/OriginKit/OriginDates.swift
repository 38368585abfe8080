import Foundation

/// Dates an origin writes in its listings, read without trusting them.
enum OriginDates {
    /// The latest date accepted: the end of year 9999, as HTTP and ISO 8601 dates spell them.
    static let latest = 253_402_300_799.0

    /// `text` read by `formatter` as seconds since 1970, or nil when it is not a date of years 1970 to 9999.
    ///
    /// Only short ASCII text reaches Foundation's formatters: on Linux they trap on some non-ASCII text
    /// (`Wed, 25 Nov 2026 02:27:5͙GMT`, a combining mark, found by fuzzing nginx's listing), and a listing must
    /// not take the process down.
    static func seconds(_ text: String, _ formatter: (String) -> Date?) -> Double? {
        guard text.utf8.count <= 64, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }),
            let seconds = formatter(text)?.timeIntervalSince1970, seconds >= 0, seconds <= latest
        else { return nil }
        return seconds
    }
}
