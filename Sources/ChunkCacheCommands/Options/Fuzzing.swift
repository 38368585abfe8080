/// The command line's parsers of sizes, ranges and durations, as fuzz targets (`scripts/fuzz.sh`,
/// `Fuzz/README.md`): each returns what is wrong with what parsed (an invariant the parser must keep), or nil.
package enum CommandFuzzing {
    /// `4096`, `64KiB`, `START:LENGTH`: what parses is never negative and its plain number parses back to it.
    package static func byteSizeAndRange(_ bytes: UnsafeRawBufferPointer) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        if let size = ByteSize(argument: text) {
            guard size.bytes >= 0 else { return "\(text) parsed to \(size.bytes) bytes" }
            guard ByteSize(argument: "\(size.bytes)")?.bytes == size.bytes else {
                return "\(size.bytes) does not parse back"
            }
        }
        if let range = RangeArgument(argument: text) {
            guard range.range.location >= 0, range.range.length >= 0 else {
                return "\(text) parsed to a negative range"
            }
        }
        return nil
    }

    /// `90`, `90s`, `30m`, `1h`, `2d`: what parses is finite and never negative, and prints as something that
    /// parses back to the same length of time.
    package static func duration(_ bytes: UnsafeRawBufferPointer) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let duration = Duration(argument: text) else { return nil }
        guard duration.seconds.isFinite, duration.seconds >= 0 else { return "\(text) parsed to \(duration.seconds) s" }
        guard let again = Duration(argument: duration.description) else {
            return "\(duration.description) does not parse"
        }
        let drift = abs(again.seconds - duration.seconds)
        return drift <= duration.seconds * 1e-12
            ? nil : "\(text) is \(duration.seconds) s, printed \(duration.description), parsed back \(again.seconds) s"
    }
}
