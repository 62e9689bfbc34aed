"""A small multilingual corpus (English, French, German) and questions about it, for the meaning benchmark.

Each document states its subject near its start, as manuals and notes do; the
questions are written to avoid the documents' own words (paraphrases), and
most are in another language than the document they should find. `KEYWORD`
lists queries a keyword engine answers, whose top hit must not change.
"""
from __future__ import annotations

DOCS: dict[str, str] = {
    "/en/limits.txt": (
        "Restricting the resources of a process\n"
        "The ulimit builtin of the shell caps what a command may consume: ulimit -v sets the largest virtual "
        "address space in kilobytes, ulimit -n the number of open file descriptors and ulimit -t the CPU "
        "seconds. Soft limits may be raised up to the hard limit by the user; only root may raise a hard limit. "
        "Put the settings in /etc/security/limits.conf to apply them at login."),
    "/en/upload-signing.txt": (
        "Signing your uploads\n"
        "Every source upload to the archive must carry a GnuPG signature. Run debsign on the .changes file "
        "after the build; it signs the .dsc and the .changes with the key named in DEBSIGN_KEYID. Uploads "
        "whose signature does not verify against the keyring are rejected by the queue daemon."),
    "/en/backups.txt": (
        "Keeping copies of your data\n"
        "Copy your home folder to an external disk every week. rsync -a --delete mirrors the folder and only "
        "transfers what changed since the last run. Keep at least one copy in another building, and test a "
        "restore now and then: a copy you never restored is a hope, not a backup."),
    "/en/sourdough.txt": (
        "Sourdough bread at home\n"
        "Feed the starter the evening before with equal weights of flour and water. Mix 500 g of flour, "
        "350 g of water, 100 g of active starter and 10 g of salt; fold the dough every half hour for two "
        "hours, shape it and let it rise overnight in the fridge. Bake at 240 degrees in a covered pot."),
    "/en/wifi.txt": (
        "When the wireless network keeps dropping\n"
        "If the laptop loses the access point every few minutes, turn off power saving for the wireless card "
        "(iw dev wlan0 set power_save off), move away from the microwave oven, and pick a less crowded "
        "channel on the router. Update the firmware of the router if the problem persists."),
    "/fr/impots.txt": (
        "Déclarer ses revenus en ligne\n"
        "La déclaration de revenus se remplit sur le site des impôts avant la fin du mois de mai. Vérifiez "
        "les montants préremplis par votre employeur, ajoutez les revenus fonciers et les frais de garde "
        "d'enfants, puis signez électroniquement. Un avis d'imposition arrive pendant l'été."),
    "/fr/velo.txt": (
        "Entretenir sa bicyclette\n"
        "Graissez la chaîne toutes les quatre semaines, après l'avoir nettoyée avec un chiffon sec. Contrôlez "
        "la pression des pneus avant chaque sortie et l'usure des patins de frein chaque mois. Un dérailleur "
        "qui saute se règle en tournant la vis de tension du câble d'un quart de tour."),
    "/fr/jardin.txt": (
        "Cultiver des tomates sur un balcon\n"
        "Semez les graines en intérieur en mars, puis repiquez les plants dans de grands pots dès que les nuits "
        "restent au-dessus de dix degrés. Arrosez au pied, jamais sur les feuilles, et pincez les gourmands "
        "chaque semaine. Les fruits se récoltent de juillet à septembre."),
    "/fr/reunion.txt": (
        "Compte rendu de la réunion d'équipe\n"
        "L'équipe a décidé de reporter la mise en production à la semaine prochaine, faute de tests suffisants "
        "sur le module de paiement. Claire rédige le plan de test, Marc corrige les deux anomalies bloquantes. "
        "Prochaine réunion jeudi à dix heures."),
    "/fr/sommeil.txt": (
        "Mieux dormir\n"
        "Se coucher et se lever à heure fixe, éviter les écrans une heure avant le coucher et garder la chambre "
        "fraîche aident à s'endormir. La caféine prise après seize heures retarde l'endormissement. Une sieste "
        "de vingt minutes suffit pour récupérer sans troubler la nuit."),
    "/de/mietvertrag.txt": (
        "Kündigung der Wohnung\n"
        "Der Mieter kann den Mietvertrag mit einer Frist von drei Monaten schriftlich kündigen. Die Kündigung "
        "muss spätestens am dritten Werktag eines Monats beim Vermieter eingehen. Bei Auszug wird die Kaution "
        "nach Prüfung der Wohnung und der Nebenkostenabrechnung zurückgezahlt."),
    "/de/erste-hilfe.txt": (
        "Erste Hilfe bei Verbrennungen\n"
        "Kühlen Sie die verbrannte Haut sofort zehn Minuten lang mit handwarmem Wasser, nicht mit Eis. Entfernen "
        "Sie Ringe und Uhren, bevor die Stelle anschwillt. Große oder tiefe Wunden deckt man steril ab und ruft "
        "den Notruf 112."),
    "/de/drucker.txt": (
        "Der Drucker im zweiten Stock\n"
        "Der Netzwerkdrucker im zweiten Stock druckt nur noch leere Seiten. Die Tonerkartusche wurde bereits "
        "getauscht; als Nächstes wird die Bildtrommel ersetzt. Bis dahin bitte den Drucker im Erdgeschoss "
        "benutzen und Aufträge dort abholen."),
    "/de/urlaub.txt": (
        "Urlaubsantrag stellen\n"
        "Urlaub beantragen Sie im Personalportal mindestens zwei Wochen im Voraus. Die Vorgesetzte genehmigt "
        "den Antrag, danach erscheint er im Teamkalender. Resturlaub aus dem Vorjahr verfällt am 31. März."),
    "/de/zug.txt": (
        "Verspätung und Entschädigung bei der Bahn\n"
        "Kommt der Zug mehr als sechzig Minuten zu spät an, erstattet die Bahn ein Viertel des Fahrpreises, ab "
        "zwei Stunden die Hälfte. Das Fahrgastrechteformular kann online oder im Reisezentrum eingereicht werden."),
}

# (question, the file it should find). Paraphrases avoid the document's own words; most cross languages.
QUESTIONS: list[tuple[str, str]] = [
    ("comment limiter la mémoire qu'un programme peut utiliser", "/en/limits.txt"),
    ("wie begrenze ich den Arbeitsspeicher eines Programms", "/en/limits.txt"),
    ("how can I stop a program from using too much memory", "/en/limits.txt"),
    ("comment signer un paquet que j'envoie dans l'archive", "/en/upload-signing.txt"),
    ("wie unterschreibe ich ein Paket vor dem Hochladen", "/en/upload-signing.txt"),
    ("comment sauvegarder mes fichiers sur un disque externe", "/en/backups.txt"),
    ("wie sichere ich meine Daten regelmäßig", "/en/backups.txt"),
    ("recette de pain au levain", "/en/sourdough.txt"),
    ("wie backe ich Brot mit Sauerteig", "/en/sourdough.txt"),
    ("la connexion sans fil de mon ordinateur portable se coupe sans arrêt", "/en/wifi.txt"),
    ("mein WLAN bricht ständig ab", "/en/wifi.txt"),
    ("how do I file my tax return online", "/fr/impots.txt"),
    ("wann muss ich meine Steuererklärung abgeben", "/fr/impots.txt"),
    ("how often should I oil my bike chain", "/fr/velo.txt"),
    ("wie pflege ich mein Fahrrad", "/fr/velo.txt"),
    ("growing tomatoes in pots on a balcony", "/fr/jardin.txt"),
    ("wann sät man Tomaten aus", "/fr/jardin.txt"),
    ("why was the release postponed at the team meeting", "/fr/reunion.txt"),
    ("tips to fall asleep more easily", "/fr/sommeil.txt"),
    ("warum kann ich abends nicht einschlafen", "/fr/sommeil.txt"),
    ("how much notice do I have to give to end my apartment lease", "/de/mietvertrag.txt"),
    ("comment résilier le bail de mon appartement", "/de/mietvertrag.txt"),
    ("what should I do when someone burns their hand", "/de/erste-hilfe.txt"),
    ("que faire en cas de brûlure", "/de/erste-hilfe.txt"),
    ("the office printer only prints blank pages", "/de/drucker.txt"),
    ("l'imprimante de l'étage imprime des pages blanches", "/de/drucker.txt"),
    ("how do I request time off from work", "/de/urlaub.txt"),
    ("comment poser des jours de congé", "/de/urlaub.txt"),
    ("can I get money back when my train is very late", "/de/zug.txt"),
    ("remboursement d'un billet de train en retard", "/de/zug.txt"),
]

# Keyword queries (single words, phrases, identifiers, and a few words that are all in one file): the
# keyword engine's top hit is the right one and must stay first.
KEYWORD: list[tuple[str, str]] = [
    ("ulimit", "/en/limits.txt"), ("debsign", "/en/upload-signing.txt"), ('"hard limit"', "/en/limits.txt"),
    ("rsync", "/en/backups.txt"), ("DEBSIGN_KEYID", "/en/upload-signing.txt"), ("limits.conf", "/en/limits.txt"),
    ("Kaution", "/de/mietvertrag.txt"), ("dérailleur", "/fr/velo.txt"), ("Bildtrommel", "/de/drucker.txt"),
    ("tomates balcon", "/fr/jardin.txt"), ("sourdough starter flour water", "/en/sourdough.txt"),
    ("Kündigung Frist drei Monaten", "/de/mietvertrag.txt"), ("power saving wireless card", "/en/wifi.txt"),
    ("déclaration de revenus", "/fr/impots.txt"), ("Fahrgastrechteformular", "/de/zug.txt"),
]
