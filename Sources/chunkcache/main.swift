import ChunkCacheCommands
// Not for its API: in a release build on Linux this file is compiled with -static-stdlib (Package.swift), and
// importing Foundation here names the static Foundation's libraries (ICU, CoreFoundation...) for the link.
import Foundation

exit(await ChunkCacheCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
