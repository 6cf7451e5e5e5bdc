"""Video mode (``run --mode video``): row clips attached to the requests of ER, VP and SSP.

:mod:`.clips` attaches a batch's clips to a rendered request (as video or as still frames);
:mod:`.mode` turns a run spec into the hook the engine's session applies to each request, checks video
settings before anything is sent, and says how an estimate's requests would be covered by clips.
"""
