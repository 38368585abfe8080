import ArgumentParser
import ChunkCache
import Foundation

struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a range (--range) or the whole of an item into a sparse file.",
        discussion: """
            Prints the file's path. Without --out the file is a hand-off in the store's tmp/: you own it and \
            delete it. With --out the bytes are cloned there (reflink where possible).
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The domain.")
    var domain: String

    @Argument(help: "The item identifier.")
    var item: String

    @Option(help: "The content version; default: the newest.")
    var version: String?

    @Option(help: ArgumentHelp("The bytes needed, START:LENGTH.", valueName: "start:length"))
    var range: RangeArgument?

    @Option(help: "Alignment of the retrieved range, a power of two (default 4096; needs --range).")
    var align: ByteSize?

    @Flag(help: "Fail instead of serving another version.")
    var strict = false

    @Option(help: "Clone the result to this path instead of handing off a temp file.")
    var out: String?

    @Flag(help: "Replace an existing --out file.")
    var force = false

    @Option(help: "The requesting process's name (checked against the domain's non-materializing list).")
    var process: String?

    func validate() throws {
        if align != nil && range == nil { throw ValidationError("--align needs --range START:LENGTH") }
        if force && out == nil { throw ValidationError("--force needs --out PATH") }
        if let align, align.bytes <= 0 || align.bytes > 1 << 30 || align.bytes & (align.bytes - 1) != 0 {
            throw ValidationError("--align \(align.bytes) is not a power of two from 1 to 1GiB")
        }
    }

    func run() async throws {
        let cache = try await global.openCache()
        let id = ItemIdentifier(domain: domain, item)
        let progress = DownloadProgress()
        let request = FetchRequest(requestingProcess: process, progress: progress)
        let display = DownloadProgressDisplay(progress)
        let requested = version.map { ItemVersion($0) }
        let options: FetchOptions = strict ? .strictVersioning : []
        let destination: FetchDestination = out.map { .clone(to: $0, replaceExisting: force) } ?? .handOff
        let result: FetchResult
        do {
            if let range {
                result = try await cache.fetchPartialContents(
                    for: id, version: requested, request: request, minimalRange: range.range,
                    aligningTo: Int(align?.bytes ?? 4096), options: options, destination: destination)
            } else {
                result = try await cache.fetchContents(
                    for: id, version: requested, request: request, options: options, destination: destination)
            }
        } catch {
            await display.finish()
            throw error
        }
        // What this fetch taught its item's trace is saved, once the trace's prefetch is done; chunks downloaded
        // for either may still be committing behind them: keep them before exiting.
        await cache.finishTraceSessions()
        await cache.waitForDownloads()
        await display.finish()
        try await SettleBehind.afterDownloads(cache)
        // The fetch set the item's last use; this process ends before the batch would be written.
        do { try await cache.flushUsage() } catch {
            FileHandle.standardError.write(
                Data("chunkcache: could not record the last use of \(domain)/\(item): \(error)\n".utf8))
        }
        var fields: [(String, JSON)] = [
            ("path", .string(result.url.path)), ("owner", .string(result.owner.rawValue)), ("item", result.item.json),
            (
                "retrievedRange",
                .object([
                    ("location", .int(result.retrievedRange.location)), ("length", .int(result.retrievedRange.length)),
                ])
            ),
            ("flags", .array(result.flags.names.map { .string($0) })), ("domainVersion", result.domainVersion.json),
            ("downloadedBytes", .int(result.downloadedBytes)), ("requests", .int(Int64(result.originRequests))),
        ]
        if let strategy = result.cloneStrategy { fields.append(("cloneStrategy", .string(strategy.rawValue))) }
        global.emit(
            .object(fields),
            summary:
                "\(result.url.path)\n\(result.owner == .caller ? "hand-off (yours to delete)" : result.cloneStrategy.map { "cloned by \($0.rawValue)" } ?? "written in place"): \(domain)/\(item) version \(result.item.itemVersion.contentVersionString), bytes \(result.retrievedRange) of \(result.item.documentSize) (\(formatSize(result.item.documentSize)))\(result.flags.names.isEmpty ? "" : ", " + result.flags.names.joined(separator: ","))\(result.originRequests == 0 ? "" : "\ndownloaded \(formatSize(result.downloadedBytes)) in \(result.originRequests) request\(result.originRequests == 1 ? "" : "s") from the origin")"
        )
    }
}
