import ArgumentParser

/// The command line's parsers of sizes, ranges, durations and `--version`, as fuzz targets (`scripts/fuzz.sh`,
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

    /// A command line (its arguments separated by NUL bytes), through `chunkcache`'s fast answer to `--version`
    /// and through the full parse: see `versionFastPath(arguments:)`.
    package static func versionFastPath(_ bytes: UnsafeRawBufferPointer) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        return versionFastPath(
            arguments: text.isEmpty
                ? [] : text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init))
    }

    /// `chunkcache ARGUMENTS` gets the same outcome through the fast path (`versionReply`, answered before the
    /// command tree is parsed) as through the full parse: whenever the fast path answers, ArgumentParser's own
    /// parse of the same arguments asks for the version too; and the parse `main` runs asks for the version
    /// exactly when the fast path answers, so no usage error hides behind a `--version`.
    package static func versionFastPath(arguments: [String]) -> String? {
        let fastPath = ChunkCacheCommand.versionReply(to: arguments) != nil
        let fullParse = asksForVersion { _ = try ChunkCacheCommand.parsedCommandLine(arguments) }
        if fastPath != fullParse {
            return
                "\(arguments): the fast path \(fastPath ? "answers" : "does not answer") the version, the full parse "
                + (fullParse ? "does" : "does not")
        }
        if fastPath && !argumentParserAsksForVersion(arguments) {
            return "\(arguments): the fast path answers the version, ArgumentParser's parse does not"
        }
        return nil
    }

    /// Whether ArgumentParser's own parse of `chunkcache ARGUMENTS` answers with the version.
    package static func argumentParserAsksForVersion(_ arguments: [String]) -> Bool {
        asksForVersion { _ = try ChunkCacheCommand.parseAsRoot(arguments) }
    }

    /// Whether `parse` throws ArgumentParser's answer to `--version`.
    private static func asksForVersion(_ parse: () throws -> Void) -> Bool {
        do {
            try parse()
            return false
        } catch {
            return ChunkCacheCommand.isVersionRequest(error)
        }
    }
}
