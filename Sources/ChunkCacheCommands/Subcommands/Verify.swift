import ArgumentParser
import ChunkCache
import Foundation

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-hash every chunk, check every manifest, and recount references and counters.",
        discussion: """
            Exits 0 with its report whether or not it finds corruption. Downloaded chunks not settled yet (fills) are checked \
            too: their bytes against their XXH3 and the SHA-256 their manifest knew, and their records against the manifests. \
            --repair removes corrupt chunks and drops corrupt fills, marking the manifest entries that used them absent (a fetch \
            downloads them again), and mends the fills' records, files and counter that disagree. The walk runs in a child process: LMDB trusts its pages, and a damaged one can crash \
            the process reading it; such a crash is reported as damage (corruptData), naming the signal and where the walk was, \
            and `chunkcache recover --to NEWSTORE` salvages what can be read.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Remove corrupt chunks and fills.")
    var repair = false

    func run() async throws {
        var arguments = [VerifyWalk.configuration.commandName!, "--tmp-grace", global.tmpGrace.description]
        if let store = global.store { arguments += ["--store", store] }
        if repair { arguments.append("--repair") }
        let child = try await ChildProcess.run(arguments)
        if let result = child.result {
            if let report = result["report"] as? String, let summary = result["summary"] as? String {
                print(global.json ? report : summary)
                return
            }
            if let error = result["error"] as? [String: Any], let name = error["code"] as? String,
                let message = error["message"] as? String
            {
                throw CacheError(CacheError.Code.allCases.first { $0.name == name } ?? .corruptData, message)
            }
        }
        let store = global.store ?? "the default store"
        var place = "before it read any record"
        if let walking = child.lastLine.flatMap({ ChildProcess.object($0) }), let what = walking["walking"] as? String {
            place =
                (walking["key"] as? String).map { "while reading the `\(what)` database at key \($0)" }
                ?? "while \(what)"
        }
        let said = child.errorTail.isEmpty ? "" : " (it said: \(child.errorTail))"
        throw CacheError(
            .corruptData,
            """
            the store at \(store) is damaged: verify's walk of its databases \(child.ending) \(place)\(said); \
            nothing was changed. Run `chunkcache --store \(store) recover --to NEWSTORE` to salvage every record and chunk \
            that can be read into a new store, then use NEWSTORE
            """)
    }
}
