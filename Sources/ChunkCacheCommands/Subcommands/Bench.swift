import ArgumentParser

/// `chunkcache bench`: the engine measured on the user's own files, beside floors measured in the same run.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the engine on your own files, beside what the machine can do at best.",
        discussion: """
            Each benchmark works in a scratch store under the temp directory (never the --store one) and \
            removes it afterwards. While it runs, a progress line is shown on stderr when stderr is a terminal.
            """,
        subcommands: [BenchReadLatency.self, BenchDedup.self, BenchChurn.self, BenchDeltas.self])

    // Declared here as well so `chunkcache --json bench dedup …` parses: the root moves global options to just
    // after the first command name, before `dedup`. A subcommand's `global`, under the same name, reads them.
    @OptionGroup var global: GlobalOptions
}
