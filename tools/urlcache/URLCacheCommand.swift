import ArgumentParser
@main struct URLCacheCommand: ParsableCommand {}
