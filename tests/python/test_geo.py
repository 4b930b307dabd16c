"""Geo commands: GEOADD, GEODIST, GEOHASH, GEOPOS, GEORADIUS[BYMEMBER][_RO],
GEOSEARCH and GEOSEARCHSTORE. The expected replies (scores, distances, hashes,
coordinates, error texts) were produced by redis-server 7.0.15."""

import random

from conftest import unparsed

# (command, reply) in order, each run on the state the ones before it left.
# Errors are ("error", text).
CASES = [
    (['GEOADD', 'Sicily', '13.361389', '38.115556', 'Palermo', '15.087269', '37.502669', 'Catania'], 2),
    (['GEOADD', 'Sicily', '13.361389', '38.115556', 'Palermo'], 0),
    (['GEOADD', 'Sicily', 'CH', '13.361389', '38.2', 'Palermo', '12.5', '37.8', 'Marsala'], 2),
    (['GEOADD', 'Sicily', 'NX', '1', '1', 'Palermo', '14.2', '38.0', 'Cefalu'], 1),
    (['GEOADD', 'Sicily', 'XX', 'CH', '13.361389', '38.115556', 'Palermo', '2', '2', 'Nowhere'], 1),
    (['GEOADD', 'Sicily', 'NX', 'XX', '1', '1', 'a'], ('error', 'syntax error')),
    (['GEOADD', 'Sicily', '1', '1'], ('error', "wrong number of arguments for 'geoadd' command")),
    (['GEOADD', 'Sicily', 'ch', 'ch', 'ch'], ('error', 'syntax error')),
    (['GEOADD', 'Sicily', 'GT', '1', '1', 'a'], ('error', 'syntax error')),
    (['GEOADD', 'Sicily', '181', '10', 'bad'], ('error', 'invalid longitude,latitude pair 181.000000,10.000000')),
    (['GEOADD', 'Sicily', '-180.5', '10', 'bad'], ('error', 'invalid longitude,latitude pair -180.500000,10.000000')),
    (['GEOADD', 'Sicily', '10', '85.06', 'bad'], ('error', 'invalid longitude,latitude pair 10.000000,85.060000')),
    (['GEOADD', 'Sicily', '10', '-85.1', 'bad'], ('error', 'invalid longitude,latitude pair 10.000000,-85.100000')),
    (['GEOADD', 'Sicily', 'abc', '10', 'bad'], ('error', 'value is not a valid float')),
    (['GEOADD', 'Sicily', '10', 'abc', 'bad'], ('error', 'value is not a valid float')),
    (['GEOADD', 'Sicily', '1', '1', 'a', '2', '2'], ('error', 'syntax error')),
    (['ZRANGE', 'Sicily', '0', '-1', 'WITHSCORES'], ['Marsala', '3478922452344708', 'Palermo', '3479099956230698', 'Catania', '3479447370796909', 'Cefalu', '3479475281020655']),
    (['GEOADD', 'Edges', '180', '85.05112878', 'ne', '-180', '-85.05112878', 'sw', '0', '0', 'origin', '-0.0001', '0.0001', 'nearorigin'], 4),
    (['ZRANGE', 'Edges', '0', '-1', 'WITHSCORES'], ['sw', '0', 'nearorigin', '1876499844738231', 'origin', '3377699720527872', 'ne', '13510798882111488']),
    (['GEOPOS', 'Edges', 'ne', 'sw', 'origin', 'nearorigin'], [['180', '85.0511287799999991'], ['-179.99999731779098511', '-85.05112751263942528'], ['0.00000268220901489', '0.00000126736058093'], ['-0.00009924173355103', '0.00010012148579364']]),
    (['GEOHASH', 'Edges', 'ne', 'sw', 'origin', 'nearorigin'], ['bp05b5048p0', '00bh0hbj200', 's0000000000', 'ebpbpbpbtd0']),
    (['GEOPOS', 'Sicily', 'Palermo', 'Catania', 'Marsala', 'nope'], [['13.36138933897018433', '38.11555639549629859'], ['15.08726745843887329', '37.50266842333162032'], ['12.49999791383743286', '37.79999881948555895'], None]),
    (['GEOPOS', 'Sicily'], []),
    (['GEOPOS', 'nokey', 'a', 'b'], [None, None]),
    (['GEOHASH', 'Sicily', 'Palermo', 'Catania', 'Marsala', 'Cefalu', 'nope'], ['sqc8b49rny0', 'sqdtr74hyu0', 'sq8zh3q0zn0', 'sqf05jsn5c0', None]),
    (['GEOHASH', 'Sicily'], []),
    (['GEOHASH', 'nokey', 'a', 'b'], [None, None]),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania'], '166274.1516'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'm'], '166274.1516'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'KM'], '166.2742'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'mi'], '103.3182'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'ft'], '545518.8700'),
    (['GEODIST', 'Sicily', 'Palermo', 'Palermo'], '0.0000'),
    (['GEODIST', 'Sicily', 'Palermo', 'nope'], None),
    (['GEODIST', 'nokey', 'a', 'b'], None),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEODIST', 'nokey', 'a', 'b', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'km', 'extra'], ('error', 'syntax error')),
    (['GEODIST', 'Edges', 'ne', 'sw', 'km'], '18919.8446'),
    (['SET', 'str', 'x'], 'OK'),
    (['GEOADD', 'str', '1', '1', 'a'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEOPOS', 'str', 'a'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEOHASH', 'str', 'a'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEODIST', 'str', 'a', 'b'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEORADIUS', 'str', '15', '37', '100', 'km'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEOSEARCH', 'str', 'FROMLONLAT', '15', '37', 'BYRADIUS', '100', 'km'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km'], ['Palermo', 'Catania', 'Cefalu']),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'ASC'], ['Catania', 'Cefalu', 'Palermo']),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'DESC'], ['Palermo', 'Cefalu', 'Catania']),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'WITHDIST'], [['Palermo', '190.4424'], ['Catania', '56.4413'], ['Cefalu', '131.7361']]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'WITHCOORD'], [['Palermo', ['13.36138933897018433', '38.11555639549629859']], ['Catania', ['15.08726745843887329', '37.50266842333162032']], ['Cefalu', ['14.19999808073043823', '38.0000009925631943']]]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'WITHHASH'], [['Palermo', 3479099956230698], ['Catania', 3479447370796909], ['Cefalu', 3479475281020655]]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'WITHDIST', 'WITHCOORD', 'WITHHASH', 'ASC'], [['Catania', '56.4413', 3479447370796909, ['15.08726745843887329', '37.50266842333162032']], ['Cefalu', '131.7361', 3479475281020655, ['14.19999808073043823', '38.0000009925631943']], ['Palermo', '190.4424', 3479099956230698, ['13.36138933897018433', '38.11555639549629859']]]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'mi', 'WITHDIST', 'DESC'], [['Marsala', '147.9718'], ['Palermo', '118.3357'], ['Cefalu', '81.8572'], ['Catania', '35.0711']]),
    (['GEORADIUS', 'Sicily', '15', '37', '600000', 'ft', 'WITHDIST', 'ASC'], [['Catania', '185174.7305'], ['Cefalu', '432204.8916']]),
    (['GEORADIUS', 'Sicily', '15', '37', '200000', 'm', 'WITHDIST', 'ASC', 'COUNT', '2'], [['Catania', '56441.2579'], ['Cefalu', '131736.0509']]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'COUNT', '1', 'ANY'], ['Palermo']),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'ANY'], ('error', 'the ANY argument requires COUNT argument')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'COUNT', '0'], ('error', 'COUNT must be > 0')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'COUNT', '-3'], ('error', 'COUNT must be > 0')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'COUNT', 'x'], ('error', 'value is not an integer or out of range')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'COUNT'], ('error', 'syntax error')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'BADOPT'], ('error', 'syntax error')),
    (['GEORADIUS', 'Sicily', '15', '37', '-1', 'km'], ('error', 'radius cannot be negative')),
    (['GEORADIUS', 'Sicily', '15', '37', 'x', 'km'], ('error', 'need numeric radius')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEORADIUS', 'Sicily', '200', '37', '200', 'km'], ('error', 'invalid longitude,latitude pair 200.000000,37.000000')),
    (['GEORADIUS', 'Sicily', '15', '37', '0', 'km'], []),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'STORE', 'dst', 'WITHDIST'], ('error', 'STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'STORE', 'dst'], 3),
    (['ZRANGE', 'dst', '0', '-1', 'WITHSCORES'], ['Palermo', '3479099956230698', 'Catania', '3479447370796909', 'Cefalu', '3479475281020655']),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'STOREDIST', 'dst', 'ASC', 'COUNT', '2'], 2),
    (['ZRANGE', 'dst', '0', '-1', 'WITHSCORES'], ['Catania', '56.441257870158204', 'Cefalu', '131.73605094880435']),
    (['GEORADIUS', 'Sicily', '15', '37', '1', 'm', 'STORE', 'dst'], 0),
    (['EXISTS', 'dst'], 0),
    (['GEORADIUS', 'nokey', '15', '37', '1', 'km'], []),
    (['GEORADIUS', 'nokey', '15', '37', '1', 'km', 'STORE', 'Sicily2'], 0),
    (['GEORADIUS', 'nokey', '15', '37', '1', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEORADIUS_RO', 'Sicily', '15', '37', '200', 'km', 'WITHDIST', 'ASC'], [['Catania', '56.4413'], ['Cefalu', '131.7361'], ['Palermo', '190.4424']]),
    (['GEORADIUS_RO', 'Sicily', '15', '37', '200', 'km', 'STORE', 'dst'], ('error', 'syntax error')),
    (['GEORADIUS_RO', 'Sicily', '15', '37', '200', 'km', 'STOREDIST', 'dst'], ('error', 'syntax error')),
    (['GEORADIUSBYMEMBER', 'Sicily', 'Palermo', '200', 'km', 'WITHDIST', 'ASC'], [['Palermo', '0.0000'], ['Cefalu', '74.5599'], ['Marsala', '83.2973'], ['Catania', '166.2742']]),
    (['GEORADIUSBYMEMBER', 'Sicily', 'Palermo', '200', 'km', 'WITHCOORD', 'WITHHASH', 'DESC', 'COUNT', '2'], [['Catania', 3479447370796909, ['15.08726745843887329', '37.50266842333162032']], ['Marsala', 3478922452344708, ['12.49999791383743286', '37.79999881948555895']]]),
    (['GEORADIUSBYMEMBER', 'Sicily', 'nope', '200', 'km'], ('error', 'could not decode requested zset member')),
    (['GEORADIUSBYMEMBER', 'Sicily', 'Palermo', 'x', 'km'], ('error', 'need numeric radius')),
    (['GEORADIUSBYMEMBER', 'nokey', 'nope', 'x', 'parsec'], []),
    (['GEORADIUSBYMEMBER', 'nokey', 'nope', 'x', 'parsec', 'BADOPT'], ('error', 'syntax error')),
    (['GEORADIUSBYMEMBER', 'Sicily', 'Palermo', '200', 'km', 'STORE', 'dst'], 4),
    (['ZRANGE', 'dst', '0', '-1', 'WITHSCORES'], ['Marsala', '3478922452344708', 'Palermo', '3479099956230698', 'Catania', '3479447370796909', 'Cefalu', '3479475281020655']),
    (['GEORADIUSBYMEMBER_RO', 'Sicily', 'Palermo', '100', 'km', 'ASC'], ['Palermo', 'Cefalu', 'Marsala']),
    (['GEORADIUSBYMEMBER_RO', 'Sicily', 'Palermo', '100', 'km', 'STORE', 'dst'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'ASC'], ['Catania', 'Cefalu', 'Palermo']),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'DESC', 'WITHDIST', 'WITHCOORD', 'WITHHASH'], [['Palermo', '190.4424', 3479099956230698, ['13.36138933897018433', '38.11555639549629859']], ['Cefalu', '131.7361', 3479475281020655, ['14.19999808073043823', '38.0000009925631943']], ['Catania', '56.4413', 3479447370796909, ['15.08726745843887329', '37.50266842333162032']]]),
    (['GEOSEARCH', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYRADIUS', '200', 'km', 'ASC', 'WITHDIST'], [['Palermo', '0.0000'], ['Cefalu', '74.5599'], ['Marsala', '83.2973'], ['Catania', '166.2742']]),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYBOX', '400', '400', 'km', 'ASC', 'WITHDIST'], [['Catania', '56.4413'], ['Cefalu', '131.7361'], ['Palermo', '190.4424']]),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYBOX', '100', '400', 'km', 'ASC', 'WITHDIST'], [['Catania', '56.4413']]),
    (['GEOSEARCH', 'Sicily', 'FROMMEMBER', 'Catania', 'BYBOX', '300', '100', 'mi', 'DESC', 'WITHCOORD'], [['Marsala', ['12.49999791383743286', '37.79999881948555895']], ['Palermo', ['13.36138933897018433', '38.11555639549629859']], ['Cefalu', ['14.19999808073043823', '38.0000009925631943']], ['Catania', ['15.08726745843887329', '37.50266842333162032']]]),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYBOX', '400', '400', 'km', 'COUNT', '2'], ['Catania', 'Cefalu']),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYBOX', '400', '400', 'km', 'COUNT', '1', 'ANY'], ['Palermo']),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '1', 'km'], []),
    (['GEOSEARCH', 'Sicily', 'FROMMEMBER', 'nope', 'BYRADIUS', '200', 'km'], ('error', 'could not decode requested zset member')),
    (['GEOSEARCH', 'Sicily', 'FROMMEMBER', 'Palermo', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'km'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'FROMMEMBER', 'Palermo', 'BYRADIUS', '1', 'km'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'km', 'BYBOX', '1', '1', 'km'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYBOX', '1', '1', 'km', 'BYRADIUS', '1', 'km'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'BYRADIUS', '1', 'km', 'ASC', 'DESC'], ('error', 'exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'ASC', 'DESC'], ('error', 'exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'km', 'ANY'], ('error', 'the ANY argument requires COUNT argument')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'km', 'STORE', 'x'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'km', 'STOREDIST'], ('error', 'syntax error')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYBOX', '-1', '1', 'km'], ('error', 'height or width cannot be negative')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYBOX', 'x', '1', 'km'], ('error', 'need numeric width')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYBOX', '1', 'x', 'km'], ('error', 'need numeric height')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYBOX', '1', '1', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '91', 'BYRADIUS', '1', 'km'], ('error', 'invalid longitude,latitude pair 1.000000,91.000000')),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '1', '1', 'BYRADIUS', '-1', 'km'], ('error', 'radius cannot be negative')),
    (['GEOSEARCH', 'nokey', 'FROMMEMBER', 'x', 'BYRADIUS', '1', 'km'], []),
    (['GEOSEARCH', 'nokey', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEOSEARCHSTORE', 'dst', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'ASC'], 3),
    (['ZRANGE', 'dst', '0', '-1', 'WITHSCORES'], ['Palermo', '3479099956230698', 'Catania', '3479447370796909', 'Cefalu', '3479475281020655']),
    (['GEOSEARCHSTORE', 'dst', 'Sicily', 'FROMLONLAT', '15', '37', 'BYBOX', '400', '400', 'km', 'STOREDIST', 'ASC', 'COUNT', '2'], 2),
    (['ZRANGE', 'dst', '0', '-1', 'WITHSCORES'], ['Catania', '56.441257870158204', 'Cefalu', '131.73605094880435']),
    (['GEOSEARCHSTORE', 'dst', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'WITHDIST'], ('error', 'GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options')),
    (['GEOSEARCHSTORE', 'dst', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '1', 'm'], 0),
    (['EXISTS', 'dst'], 0),
    (['GEOSEARCHSTORE', 'dst', 'nokey', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km'], 0),
    (['GEOSEARCHSTORE', 'Sicily', 'Sicily', 'FROMMEMBER', 'Palermo', 'BYRADIUS', '100', 'km'], 3),
    (['ZRANGE', 'Sicily', '0', '-1', 'WITHSCORES'], ['Marsala', '3478922452344708', 'Palermo', '3479099956230698', 'Cefalu', '3479475281020655']),
]

# The same commands' replies in RESP3 (coordinates are doubles there), for
# the commands whose shape differs.
RESP3_CASES = [
    (['GEOPOS', 'Edges', 'ne', 'sw', 'origin', 'nearorigin'], [[180.0, 85.05112878], [-179.99999731779099, -85.05112751263943], [2.68220901489e-06, 1.26736058093e-06], [-9.924173355103e-05, 0.00010012148579364]]),
    (['GEOHASH', 'Edges', 'ne', 'sw', 'origin', 'nearorigin'], ['bp05b5048p0', '00bh0hbj200', 's0000000000', 'ebpbpbpbtd0']),
    (['GEOPOS', 'Sicily', 'Palermo', 'Catania', 'Marsala', 'nope'], [[13.361389338970184, 38.1155563954963], [15.087267458438873, 37.50266842333162], [12.499997913837433, 37.79999881948556], None]),
    (['GEOPOS', 'Sicily'], []),
    (['GEOPOS', 'nokey', 'a', 'b'], [None, None]),
    (['GEOHASH', 'Sicily', 'Palermo', 'Catania', 'Marsala', 'Cefalu', 'nope'], ['sqc8b49rny0', 'sqdtr74hyu0', 'sq8zh3q0zn0', 'sqf05jsn5c0', None]),
    (['GEOHASH', 'Sicily'], []),
    (['GEOHASH', 'nokey', 'a', 'b'], [None, None]),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania'], '166274.1516'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'm'], '166274.1516'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'KM'], '166.2742'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'mi'], '103.3182'),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'ft'], '545518.8700'),
    (['GEODIST', 'Sicily', 'Palermo', 'Palermo'], '0.0000'),
    (['GEODIST', 'Sicily', 'Palermo', 'nope'], None),
    (['GEODIST', 'nokey', 'a', 'b'], None),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEODIST', 'nokey', 'a', 'b', 'parsec'], ('error', 'unsupported unit provided. please use M, KM, FT, MI')),
    (['GEODIST', 'Sicily', 'Palermo', 'Catania', 'km', 'extra'], ('error', 'syntax error')),
    (['GEODIST', 'Edges', 'ne', 'sw', 'km'], '18919.8446'),
    (['GEOPOS', 'str', 'a'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEOHASH', 'str', 'a'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEODIST', 'str', 'a', 'b'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'WITHCOORD'], [['Palermo', [13.361389338970184, 38.1155563954963]], ['Catania', [15.087267458438873, 37.50266842333162]], ['Cefalu', [14.199998080730438, 38.000000992563194]]]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'WITHDIST', 'WITHCOORD', 'WITHHASH', 'ASC'], [['Catania', '56.4413', 3479447370796909, [15.087267458438873, 37.50266842333162]], ['Cefalu', '131.7361', 3479475281020655, [14.199998080730438, 38.000000992563194]], ['Palermo', '190.4424', 3479099956230698, [13.361389338970184, 38.1155563954963]]]),
    (['GEORADIUS', 'Sicily', '15', '37', '200', 'km', 'STORE', 'dst', 'WITHDIST'], ('error', 'STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options')),
    (['GEORADIUSBYMEMBER', 'Sicily', 'Palermo', '200', 'km', 'WITHCOORD', 'WITHHASH', 'DESC', 'COUNT', '2'], [['Catania', 3479447370796909, [15.087267458438873, 37.50266842333162]], ['Marsala', 3478922452344708, [12.499997913837433, 37.79999881948556]]]),
    (['GEOSEARCH', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'DESC', 'WITHDIST', 'WITHCOORD', 'WITHHASH'], [['Palermo', '190.4424', 3479099956230698, [13.361389338970184, 38.1155563954963]], ['Cefalu', '131.7361', 3479475281020655, [14.199998080730438, 38.000000992563194]], ['Catania', '56.4413', 3479447370796909, [15.087267458438873, 37.50266842333162]]]),
    (['GEOSEARCH', 'Sicily', 'FROMMEMBER', 'Catania', 'BYBOX', '300', '100', 'mi', 'DESC', 'WITHCOORD'], [['Marsala', [12.499997913837433, 37.79999881948556]], ['Palermo', [13.361389338970184, 38.1155563954963]], ['Cefalu', [14.199998080730438, 38.000000992563194]], ['Catania', [15.087267458438873, 37.50266842333162]]]),
    (['GEOSEARCHSTORE', 'dst', 'Sicily', 'FROMLONLAT', '15', '37', 'BYRADIUS', '200', 'km', 'WITHDIST'], ('error', 'GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options')),
]


def test_every_command_and_option_as_redis(r):
    for args, expected in CASES:
        assert unparsed(r, *args) == expected, args


def test_resp3_replies_as_redis(r, r3):
    pending = list(RESP3_CASES)
    for args, _ in CASES:
        if pending and pending[0][0] == args:
            assert unparsed(r3, *args) == pending.pop(0)[1], args
        else:
            unparsed(r, *args)
    assert not pending


def test_geoadd_is_logged_and_notified_as_zadd(r, server):
    r.config_set("notify-keyspace-events", "KEA")
    p = server.client().pubsub()
    p.psubscribe("__keyevent@0__:*")
    assert p.get_message(timeout=1)["type"] == "psubscribe"
    r.geoadd("g", (13.361389, 38.115556, "Palermo"))
    unparsed(r, "GEORADIUS", "g", "13", "38", "100", "km", "STORE", "d1")
    unparsed(r, "GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "13", "38", "BYRADIUS", "100", "km")
    unparsed(r, "GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m")
    events = []
    while True:
        m = p.get_message(timeout=0.5)
        if m is None:
            break
        events.append((m["channel"], m["data"]))
    p.close()
    assert events == [
        ("__keyevent@0__:zadd", "g"),
        ("__keyevent@0__:georadiusstore", "d1"),
        ("__keyevent@0__:geosearchstore", "d2"),
        ("__keyevent@0__:del", "d2"),
    ]


def test_command_getkeys(r):
    def keys(*args):
        return unparsed(r, "COMMAND", "GETKEYS", *args)
    assert keys("GEOADD", "g", "1", "1", "m") == ["g"]
    assert keys("GEORADIUS", "g", "1", "1", "1", "km", "STORE", "d") == ["g", "d"]
    assert keys("GEORADIUS", "g", "1", "1", "1", "km", "STOREDIST", "d") == ["g", "d"]
    assert keys("GEORADIUSBYMEMBER", "g", "m", "1", "km", "STORE", "d") == ["g", "d"]
    assert keys("GEORADIUS_RO", "g", "1", "1", "1", "km") == ["g"]
    assert keys("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km") == ["d", "g"]
    georadius, geosearch = unparsed(r, "COMMAND", "INFO", "GEORADIUS", "GEOSEARCH")
    assert "movablekeys" in georadius[2]
    assert "movablekeys" not in geosearch[2]


def test_search_finds_exactly_the_members_in_range(r):
    """Many points around a centre: GEOSEARCH returns every member whose
    distance (GEODIST, Redis's formula) is within the radius, and no other."""
    rnd = random.Random(7)
    points = []
    for i in range(1500):
        points += [rnd.uniform(2.0, 3.0), rnd.uniform(48.5, 49.2), f"p{i}"]
    r.execute_command("GEOADD", "pts", *points)
    r.execute_command("GEOADD", "pts", "2.35", "48.85", "centre")
    dists = {}
    for i in range(1500):
        dists[f"p{i}"] = float(r.geodist("pts", "centre", f"p{i}", "km"))
    for radius in (0.5, 2, 5, 12, 30):
        got = unparsed(r, "GEOSEARCH", "pts", "FROMMEMBER", "centre", "BYRADIUS", str(radius), "km", "ASC", "WITHDIST")
        found = {m: float(d) for m, d in got if m != "centre"}
        # Distances print with 4 decimals: leave out members on the edge.
        expected = {m for m, d in dists.items() if d < radius - 0.001}
        edge = {m for m, d in dists.items() if abs(d - radius) <= 0.001}
        assert expected <= set(found), radius
        assert set(found) - expected <= edge, radius
        assert [float(d) for _, d in got] == sorted(float(d) for _, d in got)
        assert all(found[m] == dists[m] for m in found)


# Members at equal distances: without COUNT (or with ASC/DESC and no COUNT)
# Redis sorts with glibc's stable qsort, so ties keep its collection order
# (cell by cell, by score then member within a cell); with a COUNT smaller
# than the matches it sorts with its partial quicksort, which is not stable.
# Replies from redis-server 7.0.15.
TIE_CASES = [
    (['GEOSEARCH', 'same', 'FROMLONLAT', '2', '48', 'BYRADIUS', '1', 'km', 'COUNT', '3'],
     ['m59', 'm01', 'm02']),
    (['GEOSEARCH', 'same', 'FROMLONLAT', '2', '48', 'BYRADIUS', '1', 'km', 'COUNT', '10', 'DESC'],
     ['m59', 'm01', 'm02', 'm03', 'm04', 'm05', 'm06', 'm07', 'm08', 'm09']),
    (['GEOSEARCH', 'same', 'FROMLONLAT', '2', '48', 'BYRADIUS', '1', 'km', 'COUNT', '5', 'ANY'],
     ['m00', 'm01', 'm02', 'm03', 'm04']),
    (['GEORADIUS', 'big', '2', '48', '1', 'km', 'COUNT', '4'],
     ['m199', 'm001', 'm002', 'm003']),
    (['GEOSEARCH', 'big', 'FROMLONLAT', '2', '48', 'BYBOX', '1', '1', 'km', 'COUNT', '7', 'ASC'],
     ['m199', 'm001', 'm002', 'm003', 'm004', 'm005', 'm006']),
    (['GEOSEARCH', 'ring', 'FROMLONLAT', '0', '0', 'BYRADIUS', '5', 'km'],
     ['x01', 'x03', 'y01', 'y03', 'x05', 'x07', 'y05', 'y07', 'x09', 'x11', 'y09', 'y11', 'y08', 'y10',
      'y04', 'y06', 'y00', 'y02', 'x08', 'x10', 'x04', 'x06', 'x00', 'x02']),
    (['GEOSEARCH', 'ring', 'FROMLONLAT', '0', '0', 'BYRADIUS', '5', 'km', 'ASC'],
     ['y01', 'y03', 'y00', 'y02', 'x01', 'x03', 'x00', 'x02', 'y05', 'y07', 'y04', 'y06', 'x05', 'x07',
      'x04', 'x06', 'y09', 'y11', 'y08', 'y10', 'x09', 'x11', 'x08', 'x10']),
    (['GEOSEARCH', 'ring', 'FROMLONLAT', '0', '0', 'BYRADIUS', '5', 'km', 'DESC'],
     ['x09', 'x11', 'x08', 'x10', 'y09', 'y11', 'y08', 'y10', 'x05', 'x07', 'x04', 'x06', 'y05', 'y07',
      'y04', 'y06', 'x01', 'x03', 'x00', 'x02', 'y01', 'y03', 'y00', 'y02']),
    (['GEOSEARCH', 'ring', 'FROMLONLAT', '0', '0', 'BYRADIUS', '5', 'km', 'COUNT', '5'],
     ['y02', 'y00', 'y01', 'y03', 'x01']),
    (['GEOSEARCH', 'ring', 'FROMLONLAT', '0', '0', 'BYRADIUS', '5', 'km', 'COUNT', '9', 'DESC'],
     ['x10', 'x08', 'x09', 'x11', 'y11', 'y09', 'y10', 'y08', 'x04']),
    (['GEORADIUS', 'ring', '0', '0', '5', 'km', 'COUNT', '6', 'WITHDIST'],
     [['y02', '1.1123'], ['y00', '1.1123'], ['y01', '1.1123'], ['y03', '1.1123'], ['x01', '1.1125'],
      ['x03', '1.1125']]),
]


def test_equal_distances_come_back_as_in_redis(r):
    r.execute_command("GEOADD", "same", *[x for i in range(60) for x in ("2", "48", f"m{i:02}")])
    # Over 128 members: the other sorted-set encoding.
    r.execute_command("GEOADD", "big", *[x for i in range(200) for x in ("2", "48", f"m{i:03}")])
    ring = []
    for k in range(12):
        d = f"{0.01 * (1 if k % 2 else -1) * (1 + k // 4):.2f}"
        ring += [d, "0", f"x{k:02}", "0", d, f"y{k:02}"]
    r.execute_command("GEOADD", "ring", *ring)
    for args, expected in TIE_CASES:
        assert unparsed(r, *args) == expected, args
    # GEOSEARCHSTORE keeps the same members as GEOSEARCH.
    assert unparsed(r, "GEOSEARCHSTORE", "dst", "same", "FROMLONLAT", "2", "48", "BYRADIUS", "1", "km", "COUNT", "3") == 3
    assert r.zrange("dst", 0, -1) == ["m01", "m02", "m59"]
